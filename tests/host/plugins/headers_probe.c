/* headers_probe.c — answers with the headers it was shown, one "name=value" per line. */
#include "common.h"

static int handle(cg_call *call, const char *route, const cg_request *req) {
  (void)route;
  char out[4096];
  size_t used = 0;
  for (size_t i = 0; i < req->header_count; ++i) {
    int n = snprintf(out + used, sizeof out - used, "%.*s=%.*s\n", (int)req->header_names[i].len,
                     req->header_names[i].data, (int)req->header_values[i].len,
                     req->header_values[i].data);
    if (n < 0 || (size_t)n >= sizeof out - used) return 1;
    used += (size_t)n;
  }
  cg_bytes body = {out, used};
  g_host->respond(call, 200, "text/plain", body);
  return 0;
}
TEST_PLUGIN(handle, 0)
