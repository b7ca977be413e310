/* common.h — shared boilerplate of the dispatch test plugins
 * (tests/host/dispatch/plugin_dispatch_test.cpp). */
#ifndef CLAWGUARD_TEST_PLUGINS_COMMON_H_
#define CLAWGUARD_TEST_PLUGINS_COMMON_H_
#include <stdio.h>
#include <string.h>

#include "clawguard/plugin.h"

static const cg_host_api *g_host;

static int test_init(const cg_host_api *host) {
  g_host = host;
  return 0;
}

static inline cg_bytes test_str(const char *s) {
  cg_bytes b = {s, strlen(s)};
  return b;
}

static inline void test_respond_json(cg_call *call, int status, const char *json) {
  g_host->respond(call, status, "application/json", test_str(json));
}

#define TEST_PLUGIN(handler, flags_value)                                                       \
  CG_EXPORT const cg_plugin *clawguard_plugin_v1(void) {                                        \
    static const cg_plugin p = {CLAWGUARD_PLUGIN_ABI, (flags_value), test_init, handler, NULL}; \
    return &p;                                                                                  \
  }
#endif
