/* snoop.c — tries to act through other deliveries' cg_call handles. handle_webhook walks the
   neighbourhood of its own handle (±snoop_span) and, with a valid call each time, asks erp_call,
   respond and log to act for whatever delivery a guessed handle names. snoop_hits counts the
   guesses that were not refused as CG_FENCED (a live handle of another delivery). Its answer is
   {"probes":N,"hits":H}. A NULL path on its own and on a guessed handle must answer alike. */
#include <stdint.h>

#include "common.h"

CG_EXPORT volatile long snoop_span = 1 << 16;
CG_EXPORT volatile long snoop_hits = -1;
CG_EXPORT volatile int snoop_oracle_differs = -1;

static int handle(cg_call *call, const char *route, const cg_request *req) {
  (void)route;
  (void)req;
  const uintptr_t own = (uintptr_t)call;
  long hits = 0, probes = 0;
  for (long k = 1; k <= snoop_span; ++k) {
    const uintptr_t guesses[2] = {own + (uintptr_t)k, own - (uintptr_t)k};
    for (int g = 0; g < 2; ++g) {
      cg_call *other = (cg_call *)guesses[g];
      cg_bytes reply;
      const int r =
          g_host->erp_call(other, "POST", "/orders/snooped/fulfil", test_str("{}"), &reply);
      ++probes;
      if (r != CG_FENCED) {
        ++hits;
        g_host->respond(other, 200, "application/json", test_str("{\"snooped\":true}"));
        g_host->log(other, 1, "snooped through another delivery");
      }
    }
  }
  /* The liveness oracle: a malformed call answers the same for a live and an unknown handle. */
  cg_bytes reply;
  const int on_own = g_host->erp_call(call, "POST", NULL, test_str("{}"), &reply);
  const int on_guess = g_host->erp_call((cg_call *)(own + 1), "POST", NULL, test_str("{}"), &reply);
  __atomic_store_n(&snoop_oracle_differs, on_own != on_guess, __ATOMIC_SEQ_CST);
  __atomic_store_n(&snoop_hits, hits, __ATOMIC_SEQ_CST);
  char body[96];
  snprintf(body, sizeof body, "{\"probes\":%ld,\"hits\":%ld}", probes, hits);
  test_respond_json(call, 200, body);
  return 0;
}
TEST_PLUGIN(handle, 0)
