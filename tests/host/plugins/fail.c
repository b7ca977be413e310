/* fail.c — answers, then returns non-zero (the answer must not count). */
#include "common.h"

static int handle(cg_call *call, const char *route, const cg_request *req) {
  (void)route;
  (void)req;
  test_respond_json(call, 200, "{}");
  return 7;
}
TEST_PLUGIN(handle, CG_PLUGIN_SERIAL)
