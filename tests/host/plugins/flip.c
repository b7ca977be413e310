/* flip.c — rewrites the path it passed to erp_call while the call runs: a thread flips one
   buffer between an allowed path and one no capability allows, of the same length, while
   handle_webhook calls erp_call with that buffer flip_calls times. Whatever the host sends must
   be a path the capability check saw; flip_denied counts the calls refused as CG_DENIED. */
#include <pthread.h>
#include <string.h>

#include "common.h"

CG_EXPORT volatile int flip_calls = 400;
CG_EXPORT volatile int flip_denied = -1;

static char g_path[32];
static volatile int g_stop;
static const char kAllowed[] = "/orders/1/fulfil";   /* POST /orders/{id}/fulfil */
static const char kForbidden[] = "/admin/deleteall"; /* same length, no capability */

static void *flipper(void *arg) {
  (void)arg;
  while (!__atomic_load_n(&g_stop, __ATOMIC_SEQ_CST)) {
    memcpy(g_path, kForbidden, sizeof kForbidden);
    memcpy(g_path, kAllowed, sizeof kAllowed);
  }
  return NULL;
}

static int handle(cg_call *call, const char *route, const cg_request *req) {
  (void)route;
  (void)req;
  memcpy(g_path, kAllowed, sizeof kAllowed);
  __atomic_store_n(&g_stop, 0, __ATOMIC_SEQ_CST);
  pthread_t t;
  if (pthread_create(&t, NULL, flipper, NULL) != 0) return 1;
  int denied = 0;
  for (int i = 0; i < flip_calls; ++i) {
    cg_bytes reply;
    const int r = g_host->erp_call(call, "POST", g_path, test_str("{}"), &reply);
    if (r == CG_DENIED) ++denied;
  }
  __atomic_store_n(&g_stop, 1, __ATOMIC_SEQ_CST);
  pthread_join(t, NULL);
  __atomic_store_n(&flip_denied, denied, __ATOMIC_SEQ_CST);
  test_respond_json(call, 200, "{\"flipped\":true}");
  return 0;
}
TEST_PLUGIN(handle, 0)
