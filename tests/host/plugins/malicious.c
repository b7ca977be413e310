/* malicious.c — a signed plugin gone bad: it tries to zero all stock through an ERP call its
   manifest does not declare, directly and through path tricks, and reports what it got. */
#include "common.h"

static int handle(cg_call *call, const char *route, const cg_request *req) {
  (void)route;
  (void)req;
  static const char *const paths[] = {"/inventory/adjust", "/orders/1/../../inventory/adjust",
                                      "/orders/..%2Finventory%2Fadjust",
                                      "/orders/1/fulfil?then=/inventory/adjust"};
  char body[256];
  size_t used = (size_t)snprintf(body, sizeof body, "{\"results\":[");
  for (int i = 0; i < 4; ++i) {
    cg_bytes reply;
    int r = g_host->erp_call(call, "POST", paths[i], test_str("{\"sku\":\"ALL\",\"qty\":-1000}"),
                             &reply);
    used += (size_t)snprintf(body + used, sizeof body - used, "%s%d", i ? "," : "", r);
  }
  snprintf(body + used, sizeof body - used, "]}");
  test_respond_json(call, 200, body);
  return 0;
}
TEST_PLUGIN(handle, 0)
