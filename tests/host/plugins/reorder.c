/* reorder.c — makes its two ERP calls in the opposite order on every other run (a plugin that is
   not deterministic on retry); returns 1 after any negative result. */
#include "common.h"

static int g_runs;

static int handle(cg_call *call, const char *route, const cg_request *req) {
  (void)route;
  (void)req;
  const int flip = __atomic_fetch_add(&g_runs, 1, __ATOMIC_SEQ_CST) % 2;
  const char *first = flip ? "/inventory/adjust" : "/orders/7/fulfil";
  const char *second = flip ? "/orders/7/fulfil" : "/inventory/adjust";
  cg_bytes reply;
  if (g_host->erp_call(call, "POST", first, test_str("{}"), &reply) < 0) return 1;
  if (g_host->erp_call(call, "POST", second, test_str("{}"), &reply) < 0) return 1;
  test_respond_json(call, 200, "{\"ok\":true}");
  return 0;
}
TEST_PLUGIN(handle, 0)
