// ops_browser_test.cpp — the operator page in a real browser: a real HttpServer on loopback
// serves /ops behind the admin bearer-token gate; headless Chromium (Debian `chromium`, driven
// through the DevTools protocol) loads it with the token injected as a request header, the DOM
// shows the plugins, the hostile plugin name stays inert, the CSP lets the stylesheet apply, a
// screenshot is kept; without the header the page is refused (401).
// FAILS (does not skip) when chromium is missing: ci/setup-deps installs it.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "clawguard/encoding.h"
#include "host/http/admin_auth.h"
#include "host/http/http_server.h"
#include "host/observe/ops_page.h"
#include "support/headless_chromium.h"
#include "support/temp_dir.h"

namespace clawguard::host {
namespace {

using testing::CdpSession;
using testing::HeadlessChromium;

constexpr std::string_view kAdminToken = "ops-admin-token-0123456789abcdef-0123456789";

OpsSnapshot Snapshot() {
  OpsSnapshot s;
  s.now_ms = 1'796'000'000'000;
  s.trust_mode = "enforce";
  s.plugins = {{"acme-orders", "1.4.2", "acme", std::string(64, 'a'), true, "", ""},
               {"beta-stock", "0.9.0", "beta", std::string(64, 'b'), true, "", ""},
               {"evil<script>window.__pwned=1</script>", "6.6.6", "mallory", std::string(64, 'c'),
                false, "digest_mismatch", "<img src=x onerror=\"window.__pwned=2\">"}};
  s.breakers = {{"POST /orders/{id}/fulfil", "open", 10}};
  s.dlq = {{"transient_exhausted", 1, 2, 3}};
  s.deliveries = 10;
  s.duplicates = 4;
  return s;
}

class OpsBrowserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Handler router = [this](const HttpRequest& req) {
      ++served_;
      if (req.target == "/ops") return MakeOpsHandler(Snapshot)(req);
      HttpResponse r;
      r.status = 404;
      r.headers.Set("Content-Type", "text/plain");
      r.body = "not found\n";
      return r;
    };
    auto gated = RequireBearerToken(SecretBytes(kAdminToken), router);
    ASSERT_TRUE(gated.ok()) << gated.error().ToString();
    ServerOptions options;
    options.workers = 2;
    auto server = HttpServer::Create(options, *gated);
    ASSERT_TRUE(server.ok()) << server.error().ToString();
    server_ = std::move(server).value();
    ASSERT_TRUE(server_->Start().ok());

    const std::string chromium = testing::FindChromium();
    ASSERT_FALSE(chromium.empty())
        << "chromium is not installed (Debian package `chromium`): run ci/setup-deps";
    std::string error;
    browser_ = HeadlessChromium::Launch(chromium, tmp_.path().string(), &error);
    ASSERT_NE(browser_, nullptr) << error;
    cdp_ = CdpSession::Connect(browser_->port(), browser_->browser_path(), &error);
    ASSERT_NE(cdp_, nullptr) << error;
  }
  void TearDown() override {
    cdp_.reset();
    browser_.reset();  // kills Chromium on every exit path (also after a failed ASSERT)
    if (server_) server_->Stop();
  }

  std::string Url() const { return "http://127.0.0.1:" + std::to_string(server_->port()) + "/ops"; }

  // Load navigates a fresh page (with |headers|) and returns its session id and the document's
  // HTTP status.
  std::pair<std::string, int> Load(const nlohmann::json& headers) {
    std::string error;
    auto session = cdp_->OpenPage(&error);
    EXPECT_TRUE(session.has_value()) << error;
    if (!session) return {"", 0};
    for (const char* m : {"Network.enable", "Page.enable"}) {
      EXPECT_TRUE(cdp_->Call(m, nlohmann::json::object(), *session, &error).has_value()) << error;
    }
    EXPECT_TRUE(cdp_->Call("Network.setExtraHTTPHeaders", {{"headers", headers}}, *session, &error))
        << error;
    auto nav = cdp_->Call("Page.navigate", {{"url", Url()}}, *session, &error);
    EXPECT_TRUE(nav.has_value()) << error;
    auto response = cdp_->WaitForEvent(
        "Network.responseReceived", *session,
        [](const nlohmann::json& p) { return p.value("type", "") == "Document"; }, &error);
    EXPECT_TRUE(response.has_value()) << error;
    auto loaded = cdp_->WaitForEvent(
        "Page.loadEventFired", *session, [](const nlohmann::json&) { return true; }, &error);
    EXPECT_TRUE(loaded.has_value()) << error;
    return {*session, response ? (*response)["response"].value("status", 0) : 0};
  }

  nlohmann::json Eval(const std::string& session, const std::string& expression) {
    std::string error;
    auto r = cdp_->Call("Runtime.evaluate", {{"expression", expression}, {"returnByValue", true}},
                        session, &error);
    EXPECT_TRUE(r.has_value()) << error;
    return r ? (*r)["result"].value("value", nlohmann::json()) : nlohmann::json();
  }

  clawguard::testing::TempDir tmp_;
  std::atomic<int> served_{0};
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<HeadlessChromium> browser_;
  std::unique_ptr<CdpSession> cdp_;
};

TEST_F(OpsBrowserTest, RendersWithBearerTokenAndKeepsScreenshot) {
  const auto [session, status] = Load({{"Authorization", "Bearer " + std::string(kAdminToken)}});
  ASSERT_FALSE(session.empty());
  EXPECT_EQ(status, 200);
  const std::string text = Eval(session, "document.body.innerText").get<std::string>();
  for (const char* want :
       {"acme-orders", "beta-stock", "evil<script>window.__pwned=1</script>", "digest_mismatch",
        "POST /orders/{id}/fulfil", "transient_exhausted", "enforce", "40.0 %"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  // The hostile name is text: no script or img element exists and nothing ran.
  EXPECT_EQ(Eval(session, "document.querySelectorAll('script,img').length"), 0);
  EXPECT_EQ(Eval(session, "typeof window.__pwned"), "undefined");
  // The CSP admitted the stylesheet by its hash (blocked, the header cells would be transparent).
  EXPECT_EQ(Eval(session, "getComputedStyle(document.querySelector('th')).backgroundColor"),
            "rgb(238, 238, 238)");

  std::string error;
  auto shot = cdp_->Call("Page.captureScreenshot",
                         {{"format", "png"}, {"captureBeyondViewport", true}}, session, &error);
  ASSERT_TRUE(shot.has_value()) << error;
  const auto png = Base64Decode((*shot)["data"].get<std::string>());
  ASSERT_TRUE(png.has_value());
  ASSERT_GT(png->size(), 8u);
  EXPECT_EQ(png->substr(1, 3), "PNG");
  const std::filesystem::path dir = std::filesystem::path(CLAWGUARD_BINARY_DIR) / "test-artifacts";
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / "ops-page.png";
  std::ofstream(file, std::ios::binary) << *png;
  std::printf("operator page screenshot: %s (%zu bytes)\n", file.c_str(), png->size());
  EXPECT_TRUE(std::filesystem::exists(file));
}

TEST_F(OpsBrowserTest, RefusedWithoutToken) {
  const auto [session, status] = Load(nlohmann::json::object());
  ASSERT_FALSE(session.empty());
  EXPECT_EQ(status, 401);
  EXPECT_EQ(served_.load(), 0);  // the gate answered; the page handler never ran
  const std::string text =
      Eval(session, "document.body ? document.body.innerText : ''").get<std::string>();
  EXPECT_EQ(text.find("acme-orders"), std::string::npos);
  const auto [session2, status2] =
      Load({{"Authorization", "Bearer wrong-token-wrong-token-wrong-token-xx"}});
  EXPECT_EQ(status2, 401);
  EXPECT_EQ(served_.load(), 0);
}

}  // namespace
}  // namespace clawguard::host
