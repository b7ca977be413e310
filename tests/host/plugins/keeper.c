/* keeper.c — keeps its cg_call after the delivery: handle_webhook makes one ERP call, answers,
   starts a thread that waits for keeper_go and then calls erp_call, respond and log with the
   kept cg_call, and returns. keeper_result holds that late erp_call's result (1 = not yet). */
#include <pthread.h>
#include <unistd.h>

#include "common.h"

CG_EXPORT volatile int keeper_go = 0;
CG_EXPORT volatile int keeper_result = 1;

static void *late(void *arg) {
  cg_call *call = (cg_call *)arg;
  while (!__atomic_load_n(&keeper_go, __ATOMIC_SEQ_CST)) usleep(1000);
  cg_bytes reply;
  int r = g_host->erp_call(call, "POST", "/orders/7/fulfil", test_str("{\"late\":true}"), &reply);
  test_respond_json(call, 200, "{\"late\":true}");
  g_host->log(call, 1, "late log");
  __atomic_store_n(&keeper_result, r, __ATOMIC_SEQ_CST);
  return NULL;
}

static int handle(cg_call *call, const char *route, const cg_request *req) {
  (void)route;
  (void)req;
  cg_bytes reply;
  int r = g_host->erp_call(call, "POST", "/orders/1/fulfil", test_str("{}"), &reply);
  if (r < 0) return 1;
  pthread_t t;
  if (pthread_create(&t, NULL, late, call) != 0) return 1;
  pthread_detach(t);
  test_respond_json(call, 200, "{\"kept\":true}");
  return 0;
}
TEST_PLUGIN(handle, 0)
