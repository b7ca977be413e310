/* respond_twice.c — calls respond() twice. */
#include "common.h"

static int handle(cg_call *call, const char *route, const cg_request *req) {
  (void)route;
  (void)req;
  test_respond_json(call, 200, "{\"n\":1}");
  test_respond_json(call, 201, "{\"n\":2}");
  return 0;
}
TEST_PLUGIN(handle, 0)
