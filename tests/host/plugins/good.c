/* good.c — a well-behaved plugin: fulfils order 42, adjusts stock, answers once with both statuses
   and the event key it was given. */
#include "common.h"

static int handle(cg_call *call, const char *route, const cg_request *req) {
  cg_bytes reply;
  int fulfil =
      g_host->erp_call(call, "POST", "/orders/42/fulfil", test_str("{\"order\":42}"), &reply);
  if (fulfil < 0 && fulfil != CG_HELD) return 1;
  int adjust = g_host->erp_call(call, "POST", "/inventory/adjust",
                                test_str("{\"sku\":\"A\",\"qty\":-1}"), &reply);
  if (adjust < 0 && adjust != CG_HELD) return 1;
  char body[512];
  snprintf(body, sizeof body, "{\"fulfil\":%d,\"adjust\":%d,\"key\":\"%.*s\",\"route\":\"%s\"}",
           fulfil, adjust, (int)req->idempotency_key.len, req->idempotency_key.data, route);
  g_host->log(call, 1, "handled");
  test_respond_json(call, 200, body);
  return 0;
}
TEST_PLUGIN(handle, 0)
