/* plugin.h — the ClawGuard plugin C ABI (ARCHITECTURE.md "Plugin ABI"). Compiles as C11 and C++20.
 */
#ifndef CLAWGUARD_PLUGIN_H_
#define CLAWGUARD_PLUGIN_H_
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

#define CLAWGUARD_PLUGIN_ABI 1u
#define CG_EXPORT __attribute__((visibility("default")))
#define CG_PLUGIN_SERIAL \
  0x1u /* the host calls handle_webhook one at a time; other flag bits: load_failed */

typedef struct {
  const char *data;
  size_t len;
} cg_bytes; /* borrowed: valid for the call */

typedef enum {                 /* negative results of erp_call; >= 0 is the ERP's HTTP status */
               CG_HELD = -1,   /* level 3: recorded as an intent, sent after confirmation */
               CG_DENIED = -2, /* not in the manifest's capabilities: never sent, audited */
               CG_PAUSED = -3, /* capability paused after a 401/403 until an operator resumes it */
               CG_BREAKER_OPEN = -4, /* the ERP endpoint's breaker is open */
               CG_MISMATCH =
                   -5, /* differs from the outbox row of this call index: event dead-lettered */
               CG_FENCED = -6, /* this worker's lease was taken over: stop */
               CG_DEFERRED =
                   -7, /* sent earlier and still pending (the host retries it): stop, retry later */
               CG_UNAVAILABLE = -8 /* timeout, TLS or connection failure, store down */
               /* Stopping (non-zero) right after CG_DEFERRED, or CG_UNAVAILABLE whose call
                  the host still retries, is answered 503 erp_pending, not 500. */
} cg_erp_result; /* CG_FENCED also: the delivery is over (returned or given up on) */

typedef struct {
  cg_bytes method, path, body; /* body: the signed bytes */
  cg_bytes idempotency_key;    /* the derived event key, 64 lowercase hex characters */
  /* Only authenticated headers, lower-case names: "webhook-id" (always) and "webhook-timestamp"
     (a live delivery; not a DLQ replay), the values the signature covered, under these names even
     when the sender used svix-*. Other request headers (Content-Type, X-Idempotency-Key, …) are
     not signed and are never shown: a plugin cannot be steered by a header an attacker changed. */
  const cg_bytes *header_names, *header_values;
  size_t header_count;
} cg_request;

/* One delivery's context; opaque and not an address (never dereference it): 62 random bits, so
   no plugin can guess another delivery's. Valid until handle_webhook returns: a host call made
   with it later, from any thread, does nothing (erp_call returns CG_FENCED, respond and log are
   ignored). erp_call copies method, path (at most 2048 bytes) and body (at most 1 MiB, else
   CG_DENIED) once, and checks and sends that copy; a delivery makes at most 1000 calls, with 8 MiB
   of bodies together (more are CG_DENIED). */
typedef struct cg_call cg_call;

typedef struct {
  uint32_t abi; /* CLAWGUARD_PLUGIN_ABI */
  /* Calls are serialized per cg_call and never sleep for backoff. *reply points into host memory
     valid until handle_webhook returns. After any negative result but CG_HELD the plugin returns at
     once. */
  int (*erp_call)(cg_call *call, const char *method, const char *path, cg_bytes body,
                  cg_bytes *reply);
  /* Exactly once per successful handle_webhook; only Content-Type is kept with the stored answer.
     The answer must be valid: status 200..599, no body with 204, 205 or 304, content_type at most
     256 bytes without CR/LF. An invalid answer is not taken: the delivery ends as a plugin failure
     (500 plugin_failed, retryable, audited with the reason), never stored. (respond returns
     nothing, to keep this ABI; check the rule before calling.) */
  void (*respond)(cg_call *call, int status, const char *content_type, cg_bytes body);
  void (*log)(cg_call *call, int level, const char *message);
} cg_host_api;

typedef struct {
  uint32_t abi;                         /* must equal the manifest's abi */
  uint32_t flags;                       /* CG_PLUGIN_SERIAL or 0 */
  int (*init)(const cg_host_api *host); /* 0 = ready; non-zero: load_failed */
  int (*handle_webhook)(cg_call *call, const char *route, const cg_request *request);
  /* 0 with one respond(): that answer; else 500, retryable, audited */
  void (*shutdown)(void);
} cg_plugin;

CG_EXPORT const cg_plugin *clawguard_plugin_v1(void);

/* Threads. With listen.execution: threads, each delivery runs on a host thread of its own, reused
   by later deliveries: thread-local state outlives a delivery. With listen.execution: fibers,
   deliveries are fibers on a few carrier threads, and a carrier switches to another delivery
   whenever one waits in erp_call: THREAD-LOCAL STATE IS SHARED by every delivery on that carrier,
   and may change across an erp_call. A plugin must not keep per-delivery state in thread-locals
   (__thread, thread_local, errno across erp_call); keep it on the stack or behind the cg_call. */

#ifdef __cplusplus
}
#endif
#endif
