/* fulfil.c — one ERP call, then stops on any negative result as plugin.h asks (returns 1);
   otherwise answers {"erp":STATUS}. */
#include "common.h"

static int handle(cg_call *call, const char *route, const cg_request *req) {
  (void)route;
  (void)req;
  cg_bytes reply;
  const int r = g_host->erp_call(call, "POST", "/orders/5/fulfil", test_str("{}"), &reply);
  if (r < 0) return 1;
  char body[64];
  snprintf(body, sizeof body, "{\"erp\":%d}", r);
  test_respond_json(call, 200, body);
  return 0;
}
TEST_PLUGIN(handle, 0)
