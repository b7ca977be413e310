/* no_respond.c — returns 0 without calling respond(). */
#include "common.h"

static int handle(cg_call *call, const char *route, const cg_request *req) {
  (void)call;
  (void)route;
  (void)req;
  return 0;
}
TEST_PLUGIN(handle, 0)
