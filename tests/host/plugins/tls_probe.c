/* tls_probe.c — shows what a thread-local is worth across an erp_call: it stores its delivery's
   webhook-id in a thread-local, makes an ERP call (where a fiber parks and its carrier may run
   another delivery), then answers {"mine":"<its id>","seen":"<the thread-local now>"}. */
#include "common.h"

static __thread char owner[128];

static int handle(cg_call *call, const char *route, const cg_request *req) {
  (void)route;
  char mine[128] = "";
  for (size_t i = 0; i < req->header_count; ++i) {
    if (req->header_names[i].len == 10 &&
        memcmp(req->header_names[i].data, "webhook-id", 10) == 0) {
      snprintf(mine, sizeof mine, "%.*s", (int)req->header_values[i].len,
               req->header_values[i].data);
    }
  }
  snprintf(owner, sizeof owner, "%s", mine);
  cg_bytes reply;
  int r = g_host->erp_call(call, "POST", "/orders/1/fulfil", test_str("{}"), &reply);
  if (r < 0) return 1;
  char body[320];
  snprintf(body, sizeof body, "{\"mine\":\"%s\",\"seen\":\"%s\"}", mine, owner);
  test_respond_json(call, 200, body);
  return 0;
}
TEST_PLUGIN(handle, 0)
