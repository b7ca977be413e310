/* acme_orders.c — the example plugin: on "order.created" it fulfils the order and forwards the
 * event to inventory, through the host's erp_call only (ARCHITECTURE.md "Plugin ABI").
 *
 * Plain C11 on libc alone, so the library's only DT_NEEDED is libc.so.6. It keeps no state but
 * the host table set once in init, so flags is 0: the host may call handle_webhook on several
 * threads at once. */
#include <stddef.h>
#include <string.h>

#include "clawguard/plugin.h"

static const cg_host_api *g_host; /* set by init, read-only afterwards */

enum { kLogInfo = 1, kLogError = 3 };
/* Longest order id we accept: it becomes one path segment of /orders/{id}/fulfil. */
enum { kMaxOrderId = 64 };

static cg_bytes Text(const char *s) {
  cg_bytes b = {s, strlen(s)};
  return b;
}

static int IsIdChar(char c) {
  /* The characters a {name} segment matches on the host ([A-Za-z0-9_~-]); anything else would be
   * refused as CG_DENIED, so it is refused here first with a clear 422. */
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '~' ||
         c == '-';
}

/* FindOrderId copies the value of the top-level-looking "order_id" member into |out|.
 * EXAMPLE ONLY: this is a bounded byte search, not a JSON parser — it finds the first
 * `"order_id"` token, skips spaces and one ':', and accepts a string of [A-Za-z0-9_~-] or a bare
 * run of digits, at most kMaxOrderId bytes. It never reads past body.len. A real plugin uses a
 * JSON parser; the host has already checked that /order_id is present (it is the business key).
 * Returns the id's length, or 0 if none was found. */
static size_t FindOrderId(cg_bytes body, char out[kMaxOrderId + 1]) {
  static const char kKey[] = "\"order_id\"";
  const size_t key_len = sizeof(kKey) - 1;
  size_t i = 0;
  for (; i + key_len <= body.len; ++i) {
    if (memcmp(body.data + i, kKey, key_len) == 0) break;
  }
  if (i + key_len > body.len) return 0;
  i += key_len;
  while (i < body.len && (body.data[i] == ' ' || body.data[i] == '\t' || body.data[i] == '\n' || body.data[i] == '\r')) ++i;
  if (i >= body.len || body.data[i] != ':') return 0;
  ++i;
  while (i < body.len && (body.data[i] == ' ' || body.data[i] == '\t' || body.data[i] == '\n' || body.data[i] == '\r')) ++i;
  const int quoted = i < body.len && body.data[i] == '"';
  if (quoted) ++i;
  size_t n = 0;
  while (i < body.len && n < kMaxOrderId && IsIdChar(body.data[i])) {
    if (!quoted && (body.data[i] < '0' || body.data[i] > '9')) return 0;
    out[n++] = body.data[i++];
  }
  if (n == 0 || i >= body.len) return 0;
  if (quoted ? body.data[i] != '"' : IsIdChar(body.data[i])) return 0; /* too long or odd bytes */
  out[n] = '\0';
  return n;
}

static void Respond(cg_call *call, int status, const char *json) {
  g_host->respond(call, status, "application/json", Text(json));
}

/* Call makes one ERP call. Returns 1 if it succeeded or was held (level 3), 0 if the delivery
 * must stop: the host documents that after any other negative result the plugin returns at once. */
static int Call(cg_call *call, const char *method, const char *path, cg_bytes body, int *held) {
  cg_bytes reply = {NULL, 0};
  const int rc = g_host->erp_call(call, method, path, body, &reply);
  if (rc == CG_HELD) {
    *held = 1;
    return 1;
  }
  if (rc >= 200 && rc < 300) return 1;
  g_host->log(call, kLogError, rc < 0 ? "erp_call did not complete; stopping this delivery" : "the ERP refused a call; stopping this delivery");
  return 0;
}

static int Init(const cg_host_api *host) {
  if (host == NULL || host->abi != CLAWGUARD_PLUGIN_ABI) return 1;
  g_host = host;
  return 0;
}

static int HandleWebhook(cg_call *call, const char *route, const cg_request *request) {
  if (strcmp(route, "order.created") != 0) {
    Respond(call, 404, "{\"status\":\"unknown_route\"}");
    return 0;
  }
  char order_id[kMaxOrderId + 1];
  if (FindOrderId(request->body, order_id) == 0) {
    Respond(call, 422, "{\"status\":\"order_id_missing\"}");
    return 0;
  }
  char path[sizeof("/orders//fulfil") + kMaxOrderId];
  strcpy(path, "/orders/");
  strcat(path, order_id);
  strcat(path, "/fulfil");

  int held = 0;
  /* Call 0 fulfils the order, call 1 hands the whole event (its lines) to inventory. The order
   * matters: the host matches re-runs to outbox rows by call index. */
  if (!Call(call, "POST", path, Text("{}"), &held)) return 1;
  if (!Call(call, "POST", "/inventory/adjust", request->body, &held)) return 1;
  g_host->log(call, kLogInfo, held ? "order held for confirmation" : "order fulfilled");
  if (held) Respond(call, 202, "{\"status\":\"held\"}");
  else Respond(call, 200, "{\"status\":\"fulfilled\"}");
  return 0;
}

static void Shutdown(void) {}

static const cg_plugin kPlugin = {
    CLAWGUARD_PLUGIN_ABI, /* abi */
    0u,                   /* flags: stateless, so calls may run concurrently */
    Init,
    HandleWebhook,
    Shutdown,
};

CG_EXPORT const cg_plugin *clawguard_plugin_v1(void) { return &kPlugin; }
