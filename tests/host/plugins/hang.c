/* hang.c — sets hang_entered, blocks until the test sets hang_release, then tries an ERP call and
   a respond(); hang_erp_result tells the test what erp_call returned (1 = not yet). */
#include <unistd.h>

#include "common.h"

CG_EXPORT volatile int hang_entered = 0;
CG_EXPORT volatile int hang_release = 0;
CG_EXPORT volatile int hang_erp_result = 1;

static int handle(cg_call *call, const char *route, const cg_request *req) {
  (void)route;
  (void)req;
  __atomic_store_n(&hang_entered, 1, __ATOMIC_SEQ_CST);
  while (!__atomic_load_n(&hang_release, __ATOMIC_SEQ_CST)) usleep(1000);
  cg_bytes reply;
  int r = g_host->erp_call(call, "POST", "/orders/1/fulfil", test_str("{}"), &reply);
  test_respond_json(call, 200, "{\"late\":true}");
  __atomic_store_n(&hang_erp_result, r, __ATOMIC_SEQ_CST);
  return 0;
}
TEST_PLUGIN(handle, 0)
