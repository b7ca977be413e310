// fuzz-requires: clawguard_host clawguard_store_sqlite
// http_request_fuzz.cpp — the host's request path without a socket: raw bytes → Boost.Beast's
// request parser with the listener's limits (as host/http/http_server.cpp sets them) → HttpRequest
// → WebhookPipeline::HandleDetailed with fixed routes, a FixedClock and a real SQLite idempotency
// store in a temp dir. The dispatcher answers 201, or fails / times out / answers 500 when the
// body holds FAIL / SLOW / E500, so every outcome row is reached. Seeds (make_seeds.sh) are
// deliveries signed with kSecret at the fixed time. Invariants: every answer is a valid HTTP
// status with header values free of CR/LF/NUL; a refusal is problem+json.
// The store keeps state between inputs (replays, in-progress keys): that is the point, but a
// crash may then need the inputs before it; libFuzzer's crash file plus `-runs` replays show it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/beast/core/error.hpp>
#include <boost/beast/http.hpp>
#pragma GCC diagnostic pop

#include "clawguard/clock.h"
#include "clawguard/limits.h"
#include "fuzz/fuzz_policy_files.h"
#include "host/intake/webhook_pipeline.h"
#include "sqlite/sqlite_idempotency_store.h"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using clawguard::host::HttpRequest;
using clawguard::host::HttpResponse;
using clawguard::host::PluginOutcome;

constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr uint64_t kMaxHeaders = clawguard::limits::kDefaultMaxRequestHeaders;
// Below the 1 MiB default so that inputs of libFuzzer's -max_len (64 KiB) reach the 413 path.
constexpr uint64_t kMaxBody = 16 * 1024;

struct Fixture {
  clawguard::FixedClock clock{clawguard::fuzz::kFuzzNowMs};
  std::unique_ptr<clawguard::sqlite::SqliteIdempotencyStore> store;
  std::unique_ptr<clawguard::host::WebhookPipeline> pipeline;
};

clawguard::host::PipelineRoute Route(const Fixture& f, const std::string& name, int level,
                                     std::optional<std::string> business_key) {
  auto key = clawguard::host::DecodeWebhookSecret(kSecret);
  auto previous = clawguard::host::DecodeWebhookSecret("whsec_cHJldmlvdXMtc2VjcmV0LWZvci1mdXp6");
  if (!key.ok() || !previous.ok()) std::abort();
  auto v = clawguard::host::WebhookVerifier::Create(
      std::move(key).value(), std::move(previous).value(), f.clock.NowSeconds() + 3600,
      std::chrono::milliseconds(300'000), f.clock);
  if (!v.ok()) std::abort();
  return clawguard::host::PipelineRoute{"acme-orders", name, level, std::move(business_key),
                                        std::move(v).value()};
}

PluginOutcome Dispatch(const clawguard::host::DispatchContext& ctx) {
  const std::string& body = ctx.request->body;
  if (body.find("FAIL") != std::string::npos) return PluginOutcome::Failed("fuzz: asked to fail");
  if (body.find("SLOW") != std::string::npos)
    return PluginOutcome::TimedOut("fuzz: asked to time out");
  if (body.find("E500") != std::string::npos)
    return PluginOutcome::Answered(500, "text/plain", "boom");
  return PluginOutcome::Answered(201, "application/json", R"({"ok":true})");
}

Fixture& GetFixture() {
  static Fixture* f = [] {
    auto* fx = new Fixture;  // lives for the whole run (the store's clock reference)
    auto s = clawguard::sqlite::SqliteIdempotencyStore::Open(
        (clawguard::fuzz::PolicyDir() / "state.db").string(), fx->clock);
    if (!s.ok()) std::abort();
    fx->store = std::move(s).value();
    std::vector<clawguard::host::PipelineRoute> routes;
    routes.push_back(Route(*fx, "order.created", 2, "/order/id"));
    routes.push_back(Route(*fx, "order.synced", 1, "/order/id"));
    routes.push_back(Route(*fx, "order.plain", 2, std::nullopt));
    routes.push_back(Route(*fx, "order.held", 3, std::nullopt));
    auto p = clawguard::host::WebhookPipeline::Create(
        clawguard::host::PipelineOptions{kMaxBody, kMaxHeaders, std::chrono::milliseconds(30'000)},
        std::move(routes), *fx->store, Dispatch);
    if (!p.ok()) std::abort();
    fx->pipeline = std::move(p).value();
    return fx;
  }();
  return *f;
}

// Parse runs Beast's parser over the whole input as the listener would; nullopt = refused.
std::optional<HttpRequest> Parse(std::string_view in) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(static_cast<uint32_t>(kMaxHeaders));
  parser.body_limit(kMaxBody);
  parser.eager(true);
  beast::error_code ec;
  while (!in.empty() && !parser.is_done()) {
    const size_t n = parser.put(boost::asio::buffer(in.data(), in.size()), ec);
    if (ec == http::error::need_more) {
      ec = {};
      break;
    }
    if (ec) return std::nullopt;  // 400 / 413 and close
    if (n == 0) break;
    in.remove_prefix(n);
  }
  if (!parser.is_done()) {
    parser.put_eof(ec);
    if (ec || !parser.is_done()) return std::nullopt;  // truncated: the listener would time out
  }
  auto& msg = parser.get();
  if (msg.body().size() > kMaxBody) std::abort();  // the parser's body_limit must have held
  HttpRequest r;
  r.method = std::string(msg.method_string());
  r.target = std::string(msg.target());
  for (const auto& field : msg)
    r.headers.Add(std::string(field.name_string()), std::string(field.value()));
  r.body = std::move(msg.body());
  return r;
}

bool ValidAnswer(const HttpResponse& r) {
  if (r.status < 100 || r.status > 599) return false;
  for (const auto& [name, value] : r.headers) {
    if (name.empty() || value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos)
      return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Fixture& f = GetFixture();
  auto request = Parse(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!request) return 0;
  const auto handled = f.pipeline->HandleDetailed(*request);
  if (!ValidAnswer(handled.response)) std::abort();
  if (handled.response.status >= 400 && handled.response.status != 500 &&
      handled.response.headers.Get("Content-Type") !=
          std::optional<std::string_view>("application/problem+json")) {
    std::abort();  // a refusal of the gate is problem+json (the dispatcher's own 500 is text/plain)
  }
  return 0;
}
