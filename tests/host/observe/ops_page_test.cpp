// ops_page_test.cpp — the operator page renderer: content, escaping, CSP, DLQ grouping by age.
#include "host/observe/ops_page.h"

#include <gtest/gtest.h>

#include "clawguard/encoding.h"
#include "clawguard/sha256.h"

namespace clawguard::host {
namespace {

constexpr int64_t kNowMs = 1'796'000'000'000;
constexpr int64_t kHour = 3'600'000;

OpsSnapshot Sample() {
  OpsSnapshot s;
  s.now_ms = kNowMs;
  s.trust_mode = "enforce";
  s.plugins = {
      {"acme-orders", "1.4.2", "acme", std::string(64, 'a'), true, "", "", "", "", 0},
      {"beta-stock", "0.9.0", "beta", std::string(64, 'b'), true, "", "", "", "", 0},
      {"evil<script>alert(1)</script>", "6.6.6", "\"mallory'&", std::string(64, 'c'), false,
       "digest_mismatch", "statement says <img src=x onerror=alert(2)>", "", "", 0},
  };
  s.breakers = {{"POST /orders/{id}/fulfil", "open", 10}, {"GET /stock/{sku}", "closed", 0}};
  s.open_key_breakers = 3;
  s.dlq = GroupDlqByAge({{"transient_exhausted", kNowMs - 10 * 60'000},
                         {"transient_exhausted", kNowMs - 5 * kHour},
                         {"auth", kNowMs - 48 * kHour},
                         {"transient_exhausted", kNowMs - 30 * kHour}},
                        kNowMs);
  s.deliveries = 200;
  s.duplicates = 17;
  s.leaves = {{"acme-orders", "/O=acme/CN=acme release", kNowMs / 1000 + 5 * 86400},
              {"beta-stock", "/O=beta/CN=beta release", kNowMs / 1000 + 400 * 86400},
              {"old", "/O=old/CN=old", kNowMs / 1000 - 86400}};
  return s;
}

TEST(OpsPageTest, GroupsDlqByClassAndAge) {
  const auto rows =
      GroupDlqByAge({{"transient_exhausted", kNowMs - 10 * 60'000},
                     {"transient_exhausted", kNowMs - kHour},  // exactly 1 h: not < 1 h
                     {"auth", kNowMs - 24 * kHour},            // exactly 24 h: older
                     {"transient_exhausted", kNowMs + 5000},   // clock skew: < 1 h
                     {"auth", kNowMs - 30 * kHour}},
                    kNowMs);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].dlq_class, "transient_exhausted");
  EXPECT_EQ(rows[0].under_1h, 2);
  EXPECT_EQ(rows[0].under_24h, 1);
  EXPECT_EQ(rows[0].older, 0);
  EXPECT_EQ(rows[1].dlq_class, "auth");
  EXPECT_EQ(rows[1].older, 2);
}

TEST(OpsPageTest, RendersEverySection) {
  const std::string html = RenderOpsPage(Sample());
  EXPECT_NE(html.find(std::string(64, 'a')), std::string::npos);
  for (const char* want :
       {"<!DOCTYPE html>", "acme-orders", "1.4.2", "beta-stock", "digest_mismatch",
        "Trust mode: <b class=\"ok\" id=\"mode\">enforce</b>", "POST /orders/{id}/fulfil",
        "Open per-key breakers: <b>3</b>", "transient_exhausted", "8.5 %", "in 5 d 0 h",
        "expired 1 d ago", "Refused plugins (1)", "Loaded plugins (2)"}) {
    EXPECT_NE(html.find(want), std::string::npos) << want;
  }
  // The leaf 400 days out is not near expiry.
  EXPECT_EQ(html.find("beta release"), std::string::npos);
  EXPECT_EQ(RenderOpsPage(Sample()), html);  // deterministic
}

TEST(OpsPageTest, ShowsEachLoadedPluginsIsolationAndAFailedWorker) {
  OpsSnapshot s = Sample();
  s.plugins[0].isolation = "sandbox";
  s.plugins[0].state = "failed";
  s.plugins[0].worker_faults = 5;
  s.plugins[1].isolation = "none";
  const std::string html = RenderOpsPage(s);
  EXPECT_NE(html.find("<td class=\"bad\">failed</td><td>5</td>"), std::string::npos) << html;
  EXPECT_NE(html.find("<td class=\"warn\">none</td><td>-</td><td>-</td>"), std::string::npos);
  s.plugins[0].state = "serving";
  EXPECT_NE(RenderOpsPage(s).find("<td>sandbox</td><td>serving</td><td>5</td>"), std::string::npos);
}

TEST(OpsPageTest, EscapesEveryValue) {
  const std::string html = RenderOpsPage(Sample());
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("evil&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("&quot;mallory&#39;&amp;"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(2)&gt;"), std::string::npos);
  EXPECT_EQ(HtmlEscape(std::string_view("a<b>&\"'\0c", 9)),
            std::string("a&lt;b&gt;&amp;&quot;&#39;&#xFFFD;c"));
  OpsSnapshot s;
  s.trust_mode = "<b>audit</b>";
  EXPECT_EQ(RenderOpsPage(s).find("<b>audit</b>"), std::string::npos);
}

TEST(OpsPageTest, HasNoExternalAssetsOrScripts) {
  const std::string html = RenderOpsPage(Sample());
  for (const char* banned : {"<script", " src=\"", " href=\"", "<img", "<link", "<form", "<iframe",
                             "http://", "https://", "url("}) {
    EXPECT_EQ(html.find(banned), std::string::npos) << banned;
  }
}

TEST(OpsPageTest, CspAllowsOnlyTheInlineStylesheetByHash) {
  const std::string html = RenderOpsPage(Sample());
  const auto open = html.find("<style>") + 7;
  const std::string style = html.substr(open, html.find("</style>") - open);
  const std::string expected_hash = "'sha256-" + Base64Encode(DigestView(Sha256Of(style))) + "'";
  const std::string& csp = OpsPageCsp();
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos);
  EXPECT_NE(csp.find("style-src " + expected_hash), std::string::npos) << csp;
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos);
  EXPECT_EQ(csp.find("unsafe"), std::string::npos);
  EXPECT_EQ(csp.find("script-src"), std::string::npos);  // falls back to default-src 'none'
}

TEST(OpsPageTest, HandlerServesGetWithSecurityHeaders) {
  int calls = 0;
  const Handler h = MakeOpsHandler([&] {
    ++calls;
    return Sample();
  });
  const HttpResponse r = h(HttpRequest{"GET", "/ops", {}, ""});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers.Get("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(r.headers.Get("Content-Security-Policy"), OpsPageCsp());
  EXPECT_EQ(r.headers.Get("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(r.headers.Get("Cache-Control"), "no-store");
  EXPECT_EQ(r.body, RenderOpsPage(Sample()));
  EXPECT_EQ(h(HttpRequest{"POST", "/ops", {}, ""}).status, 405);
  EXPECT_EQ(calls, 1);
}

TEST(OpsPageTest, BoundsLongTables) {
  OpsSnapshot s;
  for (std::size_t i = 0; i < kMaxOpsRows + 5; ++i) {
    s.plugins.push_back({"p" + std::to_string(i), "1.0.0", "x", "d", true, "", ""});
  }
  const std::string html = RenderOpsPage(s);
  EXPECT_NE(html.find("5 more rows not shown."), std::string::npos);
  EXPECT_EQ(html.find(">p" + std::to_string(kMaxOpsRows) + "<"), std::string::npos);
}

}  // namespace
}  // namespace clawguard::host
