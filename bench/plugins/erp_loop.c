/* erp_loop.c — the worker benchmark's plugin (bench/worker_bench.cpp): a delivery whose body is a
   decimal N makes N erp_calls, one after another, then answers 200. Nothing else: the time
   between two calls is the channel's round trip. */
#include <stdlib.h>
#include <string.h>

#include "clawguard/plugin.h"

static const cg_host_api *g_host;

static int init(const cg_host_api *host) {
  g_host = host;
  return 0;
}

static int handle(cg_call *call, const char *route, const cg_request *req) {
  (void)route;
  char digits[16] = {0};
  const size_t n = req->body.len < sizeof digits - 1 ? req->body.len : sizeof digits - 1;
  memcpy(digits, req->body.data, n);
  const long calls = strtol(digits, NULL, 10);
  const cg_bytes body = {"{}", 2};
  for (long i = 0; i < calls; ++i) {
    cg_bytes reply;
    if (g_host->erp_call(call, "POST", "/inventory/adjust", body, &reply) < 0) return 1;
  }
  g_host->respond(call, 200, "application/json", body);
  return 0;
}

CG_EXPORT const cg_plugin *clawguard_plugin_v1(void) {
  static const cg_plugin p = {CLAWGUARD_PLUGIN_ABI, 0, init, handle, NULL};
  return &p;
}
