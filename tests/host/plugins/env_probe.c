/* env_probe.c — a nosy plugin: answers with everything the process environment shows it — the
   initial environment block as /proc/self/environ has it (NULs as newlines), then getenv of the
   host's secret variables of the e2e fixture. Packaged and signed for a real `clawguard host`. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clawguard/plugin.h"

static const cg_host_api *g_host;

static int init(const cg_host_api *host) {
  g_host = host;
  return 0;
}

static char out[65536];

static int handle(cg_call *call, const char *route, const cg_request *req) {
  (void)route;
  (void)req;
  size_t used = 0;
  int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 1;
  for (;;) {
    ssize_t n = read(fd, out + used, sizeof out - 1024 - used);
    if (n <= 0) break;
    used += (size_t)n;
  }
  close(fd);
  for (size_t i = 0; i < used; ++i) {
    if (out[i] == '\0') out[i] = '\n';
  }
  static const char *const names[] = {"E2E_ADMIN", "E2E_SECRET", "E2E_ERP"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    const char *v = getenv(names[i]);
    int n = snprintf(out + used, sizeof out - used, "getenv(%s)=%s\n", names[i],
                     v == NULL ? "(null)" : v);
    if (n < 0 || (size_t)n >= sizeof out - used) return 1;
    used += (size_t)n;
  }
  cg_bytes body = {out, used};
  g_host->respond(call, 200, "text/plain", body);
  return 0;
}

CG_EXPORT const cg_plugin *clawguard_plugin_v1(void) {
  static const cg_plugin p = {CLAWGUARD_PLUGIN_ABI, CG_PLUGIN_SERIAL, init, handle, NULL};
  return &p;
}
