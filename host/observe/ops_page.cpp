// ops_page.cpp — the operator page renderer (see ops_page.h).
#include "host/observe/ops_page.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "clawguard/clock.h"
#include "clawguard/encoding.h"
#include "clawguard/sha256.h"

namespace clawguard::host {
namespace {

constexpr int64_t kHourMs = 3600LL * 1000;

// kStyle is the page's only stylesheet; the CSP allows exactly these bytes by hash.
constexpr std::string_view kStyle =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1b1b1b;background:#fafafa}"
    "h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}"
    "table{border-collapse:collapse;margin:.4em 0}th,td{border:1px solid #ccc;padding:.25em .6em;"
    "text-align:left;vertical-align:top}th{background:#eee}"
    "code{font-size:12px;word-break:break-all}.bad{color:#a00;font-weight:600}.ok{color:#070}"
    ".warn{color:#a60;font-weight:600}.muted{color:#666}";

std::string Td(std::string_view text, std::string_view cls = {}) {
  std::string out = "<td";
  if (!cls.empty()) out += " class=\"" + std::string(cls) + "\"";
  return out + ">" + HtmlEscape(text) + "</td>";
}

std::string Num(int64_t v) { return std::to_string(v); }

std::string Percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "n/a (no deliveries yet)";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f %%",
                100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}

std::string Days(int64_t seconds) {
  if (seconds < 0) return "expired " + std::to_string((-seconds) / 86400) + " d ago";
  return "in " + std::to_string(seconds / 86400) + " d " +
         std::to_string((seconds % 86400) / 3600) + " h";
}

std::string More(std::size_t total) {
  if (total <= kMaxOpsRows) return "";
  return "<p class=\"muted\">" + std::to_string(total - kMaxOpsRows) + " more rows not shown.</p>";
}

std::string PluginTables(const OpsSnapshot& s) {
  std::vector<const OpsPlugin*> loaded, refused;
  for (const auto& p : s.plugins) (p.loaded ? loaded : refused).push_back(&p);
  std::string out =
      "<h2 id=\"loaded\">Loaded plugins (" + Num(static_cast<int64_t>(loaded.size())) + ")</h2>";
  out +=
      "<table><tr><th>plugin</th><th>version</th><th>publisher</th><th>sha256</th>"
      "<th>isolation</th><th>worker</th><th>worker faults</th></tr>";
  for (std::size_t i = 0; i < loaded.size() && i < kMaxOpsRows; ++i) {
    const OpsPlugin& p = *loaded[i];
    const bool sandboxed = p.isolation == "sandbox";
    out += "<tr>" + Td(p.name) + Td(p.version) + Td(p.publisher) + "<td><code>" +
           HtmlEscape(p.digest) + "</code></td>" +
           Td(p.isolation, p.isolation == "none" ? "warn" : "") +
           Td(sandboxed ? p.state : "-", p.state == "failed" ? "bad" : "") +
           Td(sandboxed ? Num(p.worker_faults) : "-") + "</tr>";
  }
  out += "</table>" + More(loaded.size());
  out +=
      "<h2 id=\"refused\">Refused plugins (" + Num(static_cast<int64_t>(refused.size())) + ")</h2>";
  out +=
      "<table><tr><th>plugin</th><th>version</th><th>publisher</th><th>sha256</th><th>reason</th>"
      "<th>detail</th></tr>";
  for (std::size_t i = 0; i < refused.size() && i < kMaxOpsRows; ++i) {
    const OpsPlugin& p = *refused[i];
    out += "<tr>" + Td(p.name) + Td(p.version) + Td(p.publisher) + "<td><code>" +
           HtmlEscape(p.digest) + "</code></td>" + Td(p.reason, "bad") + Td(p.detail) + "</tr>";
  }
  return out + "</table>" + More(refused.size());
}

std::string BreakerTable(const OpsSnapshot& s) {
  std::string out = "<h2 id=\"breakers\">Circuit breakers</h2><p>Open per-key breakers: <b>" +
                    Num(s.open_key_breakers) + "</b></p>";
  out += "<table><tr><th>ERP endpoint</th><th>state</th><th>failures in window</th></tr>";
  for (std::size_t i = 0; i < s.breakers.size() && i < kMaxOpsRows; ++i) {
    const OpsBreaker& b = s.breakers[i];
    out += "<tr>" + Td(b.endpoint) + Td(b.state, b.state == "closed" ? "ok" : "bad") +
           Td(Num(b.failures)) + "</tr>";
  }
  return out + "</table>" + More(s.breakers.size());
}

std::string DlqTable(const OpsSnapshot& s) {
  std::string out = "<h2 id=\"dlq\">Dead-letter queue</h2>";
  out +=
      "<table><tr><th>class</th><th>&lt; 1 h</th><th>&lt; 24 "
      "h</th><th>older</th><th>total</th></tr>";
  int64_t a = 0, b = 0, c = 0;
  for (std::size_t i = 0; i < s.dlq.size() && i < kMaxOpsRows; ++i) {
    const OpsDlqClass& d = s.dlq[i];
    a += d.under_1h;
    b += d.under_24h;
    c += d.older;
    out += "<tr>" + Td(d.dlq_class) + Td(Num(d.under_1h)) + Td(Num(d.under_24h)) +
           Td(Num(d.older)) + Td(Num(d.under_1h + d.under_24h + d.older)) + "</tr>";
  }
  out += "<tr><th>all</th>" + Td(Num(a)) + Td(Num(b)) + Td(Num(c)) + Td(Num(a + b + c)) + "</tr>";
  return out + "</table>" + More(s.dlq.size());
}

std::string LeafTable(const OpsSnapshot& s) {
  const int64_t now_s = s.now_ms / 1000;
  std::vector<const OpsLeaf*> near;
  for (const auto& l : s.leaves) {
    if (l.not_after - now_s < s.expiry_window_s) near.push_back(&l);
  }
  std::sort(near.begin(), near.end(),
            [](const OpsLeaf* x, const OpsLeaf* y) { return x->not_after < y->not_after; });
  std::string out = "<h2 id=\"leaves\">Signing certificates near expiry (within " +
                    Num(s.expiry_window_s / 86400) + " d)</h2>";
  if (near.empty()) return out + "<p class=\"ok\">None.</p>";
  out += "<table><tr><th>plugin</th><th>subject</th><th>not after</th><th>expires</th></tr>";
  for (std::size_t i = 0; i < near.size() && i < kMaxOpsRows; ++i) {
    const OpsLeaf& l = *near[i];
    out += "<tr>" + Td(l.plugin) + Td(l.subject) + Td(FormatRfc3339Utc(l.not_after)) +
           Td(Days(l.not_after - now_s), l.not_after <= now_s ? "bad" : "warn") + "</tr>";
  }
  return out + "</table>" + More(near.size());
}

}  // namespace

std::vector<OpsDlqClass> GroupDlqByAge(const std::vector<DlqEntryAge>& entries, int64_t now_ms) {
  std::vector<OpsDlqClass> out;
  std::map<std::string, std::size_t> index;
  for (const auto& e : entries) {
    auto [it, inserted] = index.emplace(e.dlq_class, out.size());
    if (inserted) out.push_back(OpsDlqClass{e.dlq_class, 0, 0, 0});
    OpsDlqClass& row = out[it->second];
    const int64_t age = now_ms - e.created_ms;
    if (age < kHourMs)
      ++row.under_1h;
    else if (age < 24 * kHourMs)
      ++row.under_24h;
    else
      ++row.older;
  }
  return out;
}

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      case '\0': out += "&#xFFFD;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string RenderOpsPage(const OpsSnapshot& s) {
  const std::string mode = s.trust_mode.empty() ? "unknown" : s.trust_mode;
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width\"><meta name=\"referrer\" "
      "content=\"no-referrer\">"
      "<title>ClawGuard operator page</title><style>";
  out += kStyle;
  out += "</style></head><body><h1>ClawGuard operator page</h1>";
  out += "<p>Generated " + HtmlEscape(FormatRfc3339Utc(s.now_ms / 1000)) +
         " (read-only). Trust mode: <b class=\"" + std::string(mode == "enforce" ? "ok" : "warn") +
         "\" id=\"mode\">" + HtmlEscape(mode) + "</b></p>";
  out += "<p id=\"duplicates\">Deliveries: " + std::to_string(s.deliveries) +
         ", duplicates: " + std::to_string(s.duplicates) + ", duplicate rate: <b>" +
         Percent(s.duplicates, s.deliveries) + "</b></p>";
  out += PluginTables(s);
  out += BreakerTable(s);
  out += DlqTable(s);
  out += LeafTable(s);
  out += "</body></html>\n";
  return out;
}

const std::string& OpsPageCsp() {
  static const std::string csp =
      "default-src 'none'; style-src 'sha256-" + Base64Encode(DigestView(Sha256Of(kStyle))) +
      "'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
  return csp;
}

HttpResponse OpsPageResponse(const OpsSnapshot& snapshot) {
  HttpResponse r;
  r.status = 200;
  r.headers.Set("Content-Type", "text/html; charset=utf-8");
  r.headers.Set("Content-Security-Policy", OpsPageCsp());
  r.headers.Set("X-Content-Type-Options", "nosniff");
  r.headers.Set("X-Frame-Options", "DENY");
  r.headers.Set("Referrer-Policy", "no-referrer");
  r.headers.Set("Cache-Control", "no-store");
  r.body = RenderOpsPage(snapshot);
  return r;
}

Handler MakeOpsHandler(std::function<OpsSnapshot()> snapshot) {
  return [snapshot = std::move(snapshot)](const HttpRequest& request) {
    if (request.method != "GET") {
      HttpResponse r;
      r.status = 405;
      r.headers.Set("Allow", "GET");
      r.headers.Set("Content-Type", "text/plain; charset=utf-8");
      r.body = "method not allowed: /ops is read-only (GET)\n";
      return r;
    }
    return OpsPageResponse(snapshot());
  };
}

}  // namespace clawguard::host
