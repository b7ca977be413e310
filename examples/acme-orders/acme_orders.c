/* acme_orders.c — the example plugin: on "order.created" it fulfils the order and adjusts the
 * inventory once per order line, through the host's erp_call only (ARCHITECTURE.md "Plugin ABI").
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
/* Bounds on the order lines: more lines, a longer SKU or a quantity outside ±999999 is a 422. */
enum { kMaxLines = 100, kMaxSku = 64, kMaxQuantityDigits = 6 };

static cg_bytes Text(const char *s) {
  cg_bytes b = {s, strlen(s)};
  return b;
}

static int IsIdChar(char c) {
  /* The characters a {name} segment matches on the host ([A-Za-z0-9_~-]); anything else would be
   * refused as CG_DENIED, so it is refused here first with a clear 422. */
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '~' || c == '-';
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
  while (i < body.len && (body.data[i] == ' ' || body.data[i] == '\t' || body.data[i] == '\n' ||
                          body.data[i] == '\r'))
    ++i;
  if (i >= body.len || body.data[i] != ':') return 0;
  ++i;
  while (i < body.len && (body.data[i] == ' ' || body.data[i] == '\t' || body.data[i] == '\n' ||
                          body.data[i] == '\r'))
    ++i;
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

/* Find returns the offset of the first |token| in body[from, to), or |to| if there is none. */
static size_t Find(cg_bytes body, size_t from, size_t to, const char *token) {
  const size_t n = strlen(token);
  for (size_t i = from; i + n <= to; ++i) {
    if (memcmp(body.data + i, token, n) == 0) return i;
  }
  return to;
}

static size_t SkipSpaceAndColon(cg_bytes body, size_t i, size_t to) {
  while (i < to && (body.data[i] == ' ' || body.data[i] == '\t' || body.data[i] == '\n' ||
                    body.data[i] == '\r'))
    ++i;
  if (i >= to || body.data[i] != ':') return to;
  ++i;
  while (i < to && (body.data[i] == ' ' || body.data[i] == '\t' || body.data[i] == '\n' ||
                    body.data[i] == '\r'))
    ++i;
  return i;
}

/* OrderLine is one line of the order: a SKU of [A-Za-z0-9_~-] and a quantity. */
typedef struct {
  char sku[kMaxSku + 1];
  long quantity;
} OrderLine;

/* ParseLine reads the "sku" string and the "quantity" (or "qty") integer of the line object
 * body[from, to). EXAMPLE ONLY, like FindOrderId: a bounded byte search, not a JSON parser.
 * Returns 1 on success. */
static int ParseLine(cg_bytes body, size_t from, size_t to, OrderLine *line) {
  size_t i = Find(body, from, to, "\"sku\"");
  if (i == to) return 0;
  i = SkipSpaceAndColon(body, i + 5, to);
  if (i >= to || body.data[i] != '"') return 0;
  ++i;
  size_t n = 0;
  while (i < to && n < kMaxSku && IsIdChar(body.data[i])) line->sku[n++] = body.data[i++];
  if (n == 0 || i >= to || body.data[i] != '"') return 0;
  line->sku[n] = '\0';
  size_t q = Find(body, from, to, "\"quantity\"");
  size_t key_len = 10;
  if (q == to) {
    q = Find(body, from, to, "\"qty\"");
    key_len = 5;
  }
  if (q == to) return 0;
  q = SkipSpaceAndColon(body, q + key_len, to);
  int negative = 0;
  if (q < to && body.data[q] == '-') {
    negative = 1;
    ++q;
  }
  long value = 0;
  int digits = 0;
  while (q < to && body.data[q] >= '0' && body.data[q] <= '9' && digits < kMaxQuantityDigits) {
    value = value * 10 + (body.data[q++] - '0');
    ++digits;
  }
  if (digits == 0 || (q < to && body.data[q] >= '0' && body.data[q] <= '9')) return 0;
  line->quantity = negative ? -value : value;
  return 1;
}

/* FindLines fills |lines| from the "lines" array: each {...} object in it is one line.
 * Returns the number of lines, or -1 if the array is malformed or has more than kMaxLines. */
static int FindLines(cg_bytes body, OrderLine lines[kMaxLines]) {
  size_t i = Find(body, 0, body.len, "\"lines\"");
  if (i == body.len) return 0;
  i = SkipSpaceAndColon(body, i + 7, body.len);
  if (i >= body.len || body.data[i] != '[') return -1;
  int count = 0;
  for (++i; i < body.len && body.data[i] != ']'; ++i) {
    if (body.data[i] != '{') continue;
    const size_t end = Find(body, i, body.len, "}");
    if (end == body.len || count == kMaxLines || !ParseLine(body, i, end, &lines[count])) return -1;
    ++count;
    i = end;
  }
  return i < body.len ? count : -1;
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
  g_host->log(call, kLogError,
              rc < 0 ? "erp_call did not complete; stopping this delivery"
                     : "the ERP refused a call; stopping this delivery");
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

  OrderLine lines[kMaxLines]; /* on the stack: calls may run concurrently */
  const int line_count = FindLines(request->body, lines);
  if (line_count < 0) {
    Respond(call, 422, "{\"status\":\"lines_invalid\"}");
    return 0;
  }

  int held = 0;
  /* Call 0 fulfils the order; calls 1..n adjust the inventory, one per line, in the event's
   * order. The order matters: the host matches re-runs to outbox rows by call index. */
  if (!Call(call, "POST", path, Text("{}"), &held)) return 1;
  for (int n = 0; n < line_count; ++n) {
    /* {"order_id":"…","sku":"…","delta":-q}: at most 30 + 64 + 64 + 8 bytes. */
    char adjust[192];
    char *p = adjust;
    strcpy(p, "{\"order_id\":\"");
    strcat(p, order_id);
    strcat(p, "\",\"sku\":\"");
    strcat(p, lines[n].sku);
    strcat(p, "\",\"delta\":");
    char digits[16];
    long q = lines[n].quantity;
    int neg = q > 0; /* an order takes stock: the delta is minus the quantity */
    if (q < 0) q = -q;
    int d = 0;
    do {
      digits[d++] = (char)('0' + q % 10);
      q /= 10;
    } while (q > 0);
    size_t len = strlen(adjust);
    if (neg) adjust[len++] = '-';
    while (d > 0) adjust[len++] = digits[--d];
    adjust[len++] = '}';
    adjust[len] = '\0';
    if (!Call(call, "POST", "/inventory/adjust", Text(adjust), &held)) return 1;
  }
  g_host->log(call, kLogInfo, held ? "order held for confirmation" : "order fulfilled");
  if (held)
    Respond(call, 202, "{\"status\":\"held\"}");
  else
    Respond(call, 200, "{\"status\":\"fulfilled\"}");
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
