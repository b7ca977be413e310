/* plugin.h — the ClawGuard plugin C ABI (ARCHITECTURE.md "Plugin ABI"). Compiles as C11 and C++20. */
#ifndef CLAWGUARD_PLUGIN_H_
#define CLAWGUARD_PLUGIN_H_
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

#define CLAWGUARD_PLUGIN_ABI 1u
#define CG_EXPORT __attribute__((visibility("default")))
#define CG_PLUGIN_SERIAL 0x1u   /* the host calls handle_webhook one at a time; other flag bits: load_failed */

typedef struct { const char *data; size_t len; } cg_bytes;            /* borrowed: valid for the call */

typedef enum {                      /* negative results of erp_call; >= 0 is the ERP's HTTP status */
  CG_HELD = -1,                     /* level 3: recorded as an intent, sent after confirmation */
  CG_DENIED = -2,                   /* not in the manifest's capabilities: never sent, audited */
  CG_PAUSED = -3,                   /* capability paused after a 401/403 until an operator resumes it */
  CG_BREAKER_OPEN = -4,             /* the ERP endpoint's breaker is open */
  CG_MISMATCH = -5,                 /* differs from the outbox row of this call index: event dead-lettered */
  CG_FENCED = -6,                   /* this worker's lease was taken over: stop */
  CG_DEFERRED = -7,                 /* sent earlier and still pending (the host retries it): stop, retry later */
  CG_UNAVAILABLE = -8               /* timeout, TLS or connection failure, store down */
} cg_erp_result;

typedef struct {
  cg_bytes method, path, body;
  cg_bytes idempotency_key;         /* the derived event key, 64 lowercase hex characters */
  const cg_bytes *header_names, *header_values; size_t header_count;
} cg_request;

typedef struct cg_call cg_call;     /* one delivery's context; opaque, valid during handle_webhook */

typedef struct {
  uint32_t abi;                     /* CLAWGUARD_PLUGIN_ABI */
  /* Calls are serialized per cg_call and never sleep for backoff. *reply points into host memory valid
     until handle_webhook returns. After any negative result but CG_HELD the plugin returns at once. */
  int  (*erp_call)(cg_call *call, const char *method, const char *path, cg_bytes body, cg_bytes *reply);
  /* Exactly once per successful handle_webhook; only Content-Type is kept with the stored answer. */
  void (*respond)(cg_call *call, int status, const char *content_type, cg_bytes body);
  void (*log)(cg_call *call, int level, const char *message);
} cg_host_api;

typedef struct {
  uint32_t abi;                     /* must equal the manifest's abi */
  uint32_t flags;                   /* CG_PLUGIN_SERIAL or 0 */
  int  (*init)(const cg_host_api *host);                 /* 0 = ready; non-zero: load_failed */
  int  (*handle_webhook)(cg_call *call, const char *route, const cg_request *request);
                                    /* 0 with one respond(): that answer; else 500, retryable, audited */
  void (*shutdown)(void);
} cg_plugin;

CG_EXPORT const cg_plugin *clawguard_plugin_v1(void);

#ifdef __cplusplus
}
#endif
#endif
