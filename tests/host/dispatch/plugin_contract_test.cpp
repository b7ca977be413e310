// plugin_contract_test.cpp — what the plugin ABI promises, checked with C plugins compiled from
// tests/host/plugins at test time, the real dispatcher, pipeline and SQLite store, the test ERP
// over loopback and (for the answers a client sees) the real HttpServer:
//   - an answer that breaks the answer rule (status 200..599, no body with 204/205/304) ends the
//     delivery as a plugin failure and is never stored, so neither the first answer nor a replay
//     is an unservable 500;
//   - a cg_call kept past the delivery names nothing: erp_call returns CG_FENCED and sends nothing;
//   - plugins see only the authenticated headers;
//   - with fibers, a thread-local is shared by the deliveries of a carrier (what a plugin sees).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "host/dispatch/plugin_dispatch.h"
#include "host/http/http_server.h"
#include "host/intake/webhook_auth.h"
#include "host/intake/webhook_pipeline.h"
#include "plugins/erp_harness.h"
#include "runtime/fiber.h"
#include "support/gate.h"
#include "support/raw_client.h"
#include "support/test_plugins.h"

namespace clawguard::host {
namespace {

namespace ht = clawguard::host::testing;
using clawguard::testing::WaitFor;
using ht::ErpHarness;
using ht::TestPlugins;

using testing::kPlugin;
using testing::kRoute;
constexpr const char* kPath = "/webhooks/acme-orders/order.created";
const std::vector<std::string> kContractCaps = {"POST /orders/{id}/fulfil"};
constexpr char kHookSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

// BarrierSender holds each ERP call until |expected| calls have arrived (a park on a fiber,
// a sleep on a thread), then forwards it to the real sender: deliveries are then provably inside
// erp_call at the same time, whatever the machine's speed. Bounded: after ~20 s it forwards anyway.
class BarrierSender final : public ErpSender {
 public:
  BarrierSender(ErpSender& inner, int expected) : inner_(inner), expected_(expected) {}
  Result<ErpReply> Send(std::string_view method, std::string_view path, const HttpHeaders& headers,
                        std::string_view body) override {
    ++arrived_;
    for (int i = 0; i < 20'000 && arrived_.load() < expected_; ++i)
      fiber::SleepFor(std::chrono::milliseconds(1));
    return inner_.Send(method, path, headers, body);
  }

 private:
  ErpSender& inner_;
  const int expected_;
  std::atomic<int> arrived_{0};
};

class PluginContractTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(h_.Init()); }

  std::shared_ptr<PluginDispatcher> Dispatcher(const std::string& plugin_file,
                                               ErpSender* sender = nullptr) {
    const cg_plugin* p = TestPlugins::Get().Open(plugin_file);
    CLAWGUARD_CHECK(p != nullptr);
    DispatchOptions o;
    o.handler_timeout = std::chrono::milliseconds(20'000);
    o.lease = std::chrono::milliseconds(30'000);
    o.erp = h_.env;
    if (sender != nullptr) o.erp.sender = sender;
    auto d = PluginDispatcher::Create(std::move(o), {DispatchTarget{kPlugin, p, kContractCaps}});
    CLAWGUARD_CHECK(d.ok());
    return std::move(d).value();
  }
  std::unique_ptr<WebhookPipeline> Pipeline(const std::shared_ptr<PluginDispatcher>& d,
                                            fiber::Carriers* carriers = nullptr) {
    auto verifier =
        WebhookVerifier::Create(DecodeWebhookSecret(kHookSecret).value(), std::nullopt,
                                std::nullopt, std::chrono::milliseconds(300'000), h_.clock);
    CLAWGUARD_CHECK(verifier.ok());
    std::vector<PipelineRoute> routes;
    routes.push_back(PipelineRoute{kPlugin, kRoute, 2, std::nullopt, std::move(verifier).value()});
    auto pipeline =
        WebhookPipeline::Create(PipelineOptions{4096, 8192, std::chrono::milliseconds(30'000), 0,
                                                carriers, std::chrono::milliseconds(0)},
                                std::move(routes), h_.idem(), d->AsDispatcher());
    CLAWGUARD_CHECK(pipeline.ok());
    return std::move(pipeline).value();
  }
  // Serve puts |pipeline| behind a real HttpServer, as HostApp's main listener does.
  std::unique_ptr<HttpServer> Serve(const WebhookPipeline& pipeline) {
    ServerOptions o;
    o.workers = 1;
    o.handler_threads = 1;
    auto server = HttpServer::CreateWithFront(
        std::move(o), [&pipeline](const HttpRequest& r) -> std::variant<HttpResponse, Deferred> {
          auto front = pipeline.Front(r);
          if (auto* h = std::get_if<WebhookPipeline::Handled>(&front))
            return std::move(h->response);
          Deferred later;
          later.start = [&pipeline, admitted = std::get<WebhookPipeline::Admitted>(
                                        std::move(front))](HttpRequest req, Responder respond) {
            pipeline.FinishAsync(std::move(req), admitted, std::move(respond));
          };
          return later;
        });
    CLAWGUARD_CHECK(server.ok());
    CLAWGUARD_CHECK((*server)->Start().ok());
    return std::move(server).value();
  }
  // SignedWire renders a signed delivery of |body| as |id| for the wire, with |extra| headers.
  std::string SignedWire(const std::string& id, const std::string& body,
                         const std::string& extra = "") {
    const int64_t ts = h_.clock.NowSeconds();
    return ht::SimpleRequest(
        "POST", kPath, body,
        "webhook-id: " + id + "\r\nwebhook-timestamp: " + std::to_string(ts) +
            "\r\nwebhook-signature: " +
            WebhookSignature(DecodeWebhookSecret(kHookSecret).value(), id, ts, body) + "\r\n" +
            extra);
  }
  ht::RawResponse Post(uint16_t port, const std::string& wire) {
    auto c = ht::RawConnection::Connect(port);
    if (c == nullptr || !c->Send(wire)) return {};
    return c->ReadResponse();
  }
  HttpRequest Signed(const std::string& id, const std::string& body) {
    const int64_t ts = h_.clock.NowSeconds();
    HttpRequest r{"POST", kPath, {}, body};
    r.headers.Add("webhook-id", id);
    r.headers.Add("webhook-timestamp", std::to_string(ts));
    r.headers.Add("webhook-signature",
                  WebhookSignature(DecodeWebhookSecret(kHookSecret).value(), id, ts, body));
    return r;
  }

  ErpHarness h_;
};

// 204 and 304 carry no content, and 1xx or 600+ are no final answers: such an answer is refused
// at respond(), the delivery ends as 500 plugin_failed (audited with why), nothing is stored, and
// the retry runs the plugin again — no answer the server cannot send is ever stored and replayed.
TEST_F(PluginContractTest, AnAnswerTheHttpLayerCannotServeIsAPluginFailureNeverStored) {
  auto d = Dispatcher("answer_as");
  auto pipeline = Pipeline(d);
  auto server = Serve(*pipeline);
  int n = 0;
  for (const std::string body :
       {"status=204;body=not allowed", "status=304;body=x", "status=205;body=x",
        "status=199;body=", "status=100;body=", "status=600;body="}) {
    const std::string id = "msg_bad_" + std::to_string(++n);
    for (int attempt = 0; attempt < 2; ++attempt) {
      const ht::RawResponse r = Post(server->port(), SignedWire(id, body));
      ASSERT_TRUE(r.ok) << body;
      EXPECT_EQ(r.status, 500) << body;
      EXPECT_NE(r.body.find("/plugin_failed\""), std::string::npos) << body << ": " << r.body;
      EXPECT_FALSE(r.headers.Has("Idempotent-Replayed")) << body;  // the retry ran it again
    }
  }
  EXPECT_EQ(h_.AuditCount("\"plugin_failed\""), 12u);
  EXPECT_EQ(h_.AuditCount("status 204 carries no content"), 2u);
  EXPECT_EQ(h_.AuditCount("status 199 is not a final HTTP status"), 2u);
  server->Stop();
}

TEST_F(PluginContractTest, AValidEmptyAnswerIsServedFirstAndReplayed) {
  auto d = Dispatcher("answer_as");
  auto pipeline = Pipeline(d);
  auto server = Serve(*pipeline);
  for (const std::string status : {"204", "304"}) {
    const std::string id = "msg_empty_" + status;
    const ht::RawResponse first =
        Post(server->port(), SignedWire(id, "status=" + status + ";body="));
    ASSERT_TRUE(first.ok);
    EXPECT_EQ(first.status, std::stoi(status));
    const ht::RawResponse replay =
        Post(server->port(), SignedWire(id, "status=" + status + ";body="));
    ASSERT_TRUE(replay.ok);
    EXPECT_EQ(replay.status, std::stoi(status)) << "304 is not stored (not 2xx/4xx): it runs again";
    if (status == "204") {
      EXPECT_EQ(replay.headers.Get("Idempotent-Replayed").value_or(""), "true");
    }
  }
  const ht::RawResponse created =
      Post(server->port(), SignedWire("msg_ok", "status=201;body=made"));
  ASSERT_TRUE(created.ok);
  EXPECT_EQ(created.status, 201);
  EXPECT_EQ(created.body, "made");
  EXPECT_EQ(h_.AuditCount("\"plugin_failed\""), 0u);
  server->Stop();
}

// The plugin keeps its cg_call in a thread of its own and uses it after handle_webhook returned:
// erp_call gets CG_FENCED and nothing is sent or written (following the pointer would be a
// use-after-free, which ASan reports); its respond and log are dropped. Both dispatch paths.
TEST_F(PluginContractTest, ACgCallKeptPastItsDeliveryNamesNothing) {
  for (const bool inline_dispatch : {true, false}) {
    TestPlugins::Get().Open("keeper");
    volatile int* go = TestPlugins::Get().Symbol<volatile int>("keeper", "keeper_go");
    volatile int* result = TestPlugins::Get().Symbol<volatile int>("keeper", "keeper_result");
    __atomic_store_n(go, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(result, 1, __ATOMIC_SEQ_CST);
    auto d = Dispatcher("keeper");
    const std::string key = Sha256Hex(inline_dispatch ? "kept-inline" : "kept-handed-off");
    const int64_t token = h_.Claim(key);
    ASSERT_NE(token, 0);
    const HttpRequest request = Signed("msg_kept", "{}");
    DispatchContext ctx;
    ctx.plugin = kPlugin;
    ctx.route = kRoute;
    ctx.event_key = key;
    ctx.fencing_token = token;
    ctx.webhook_id = "msg_kept";
    ctx.request = &request;
    ctx.renew_lease = [] { return true; };
    if (inline_dispatch) ctx.on_abandon = [](const PluginOutcome&) {};
    const size_t sent_before = h_.erp().requests_total();
    const DispatchReport report = d->DispatchDetailed(ctx);
    ASSERT_EQ(report.outcome.kind, PluginOutcome::Kind::kAnswered) << report.outcome.detail;
    EXPECT_EQ(report.outcome.body, "{\"kept\":true}");
    EXPECT_EQ(h_.erp().requests_total(), sent_before + 1);
    __atomic_store_n(go, 1, __ATOMIC_SEQ_CST);
    ASSERT_TRUE(WaitFor([&] { return __atomic_load_n(result, __ATOMIC_SEQ_CST) != 1; }));
    EXPECT_EQ(__atomic_load_n(result, __ATOMIC_SEQ_CST), CG_FENCED);
    EXPECT_EQ(h_.erp().requests_total(), sent_before + 1);  // the late call was never sent
    auto rows = h_.outbox().ListEvent(key);
    ASSERT_TRUE(rows.ok());
    EXPECT_EQ(rows->size(), 1u);  // and never written
    EXPECT_EQ(h_.AuditCount("late log"), 0u);
  }
}

// DeliveryContext is a claimed delivery of |request| for the dispatcher (inline when
// |inline_dispatch|).
DispatchContext DeliveryContext(const std::string& key, int64_t token, const std::string& id,
                                const HttpRequest* request) {
  DispatchContext ctx;
  ctx.plugin = kPlugin;
  ctx.route = kRoute;
  ctx.event_key = key;
  ctx.fencing_token = token;
  ctx.webhook_id = id;
  ctx.request = request;
  ctx.renew_lease = [] { return true; };
  return ctx;
}

// A plugin walks the neighbourhood of its own cg_call handle, 2 × 65,536 guesses, while another
// delivery (another plugin's) is parked inside handle_webhook: no guess names a live delivery,
// so nothing is sent, answered or logged for the parked one, and a malformed call answers the
// same for a live handle and a guessed one (no liveness oracle).
TEST_F(PluginContractTest, NoPluginCanGuessAnotherDeliverysHandle) {
  TestPlugins::Get().Open("hang");
  volatile int* release = TestPlugins::Get().Symbol<volatile int>("hang", "hang_release");
  volatile int* hang_result = TestPlugins::Get().Symbol<volatile int>("hang", "hang_erp_result");
  volatile int* entered = TestPlugins::Get().Symbol<volatile int>("hang", "hang_entered");
  __atomic_store_n(release, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(hang_result, 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(entered, 0, __ATOMIC_SEQ_CST);
  auto victim = Dispatcher("hang");
  auto snoop = Dispatcher("snoop");
  const std::string victim_key = Sha256Hex("victim");
  const int64_t victim_token = h_.Claim(victim_key);
  ASSERT_NE(victim_token, 0);
  const HttpRequest victim_request = Signed("msg_victim", "{}");
  DispatchReport victim_report;
  std::thread victim_thread([&] {
    victim_report = victim->DispatchDetailed(
        DeliveryContext(victim_key, victim_token, "msg_victim", &victim_request));
  });
  ASSERT_TRUE(WaitFor([&] { return __atomic_load_n(entered, __ATOMIC_SEQ_CST) != 0; }));

  const std::string key = Sha256Hex("snoop");
  const int64_t token = h_.Claim(key);
  ASSERT_NE(token, 0);
  const HttpRequest request = Signed("msg_snoop", "{}");
  const DispatchReport report =
      snoop->DispatchDetailed(DeliveryContext(key, token, "msg_snoop", &request));
  ASSERT_EQ(report.outcome.kind, PluginOutcome::Kind::kAnswered) << report.outcome.detail;
  EXPECT_EQ(report.outcome.body, "{\"probes\":131072,\"hits\":0}");
  EXPECT_EQ(*TestPlugins::Get().Symbol<volatile int>("snoop", "snoop_oracle_differs"), 0);
  EXPECT_EQ(h_.erp().requests_total(), 0u);
  EXPECT_EQ(h_.AuditCount("snooped"), 0u);

  __atomic_store_n(release, 1, __ATOMIC_SEQ_CST);
  victim_thread.join();
  ASSERT_EQ(victim_report.outcome.kind, PluginOutcome::Kind::kAnswered)
      << victim_report.outcome.detail;
  EXPECT_EQ(victim_report.outcome.body, "{\"late\":true}");  // its own answer, not the snoop's
  EXPECT_EQ(h_.erp().requests_total(), 1u);                  // only its own call
  auto rows = h_.outbox().ListEvent(victim_key);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].path, "/orders/1/fulfil");
}

// A plugin thread rewrites the path buffer while erp_call runs, between an allowed path and one
// no capability allows: the host matches and sends one copy, so the ERP only ever receives paths
// the capability allows, and every other call is refused as CG_DENIED.
TEST_F(PluginContractTest, APathRewrittenDuringTheCallIsNeverSentUnchecked) {
  auto d = Dispatcher("flip");
  const std::string key = Sha256Hex("flip");
  const int64_t token = h_.Claim(key);
  ASSERT_NE(token, 0);
  const HttpRequest request = Signed("msg_flip", "{}");
  const DispatchReport report =
      d->DispatchDetailed(DeliveryContext(key, token, "msg_flip", &request));
  ASSERT_EQ(report.outcome.kind, PluginOutcome::Kind::kAnswered) << report.outcome.detail;
  const int denied = *TestPlugins::Get().Symbol<volatile int>("flip", "flip_denied");
  const std::vector<ht::RecordedRequest> sent = h_.erp().requests();
  EXPECT_EQ(sent.size() + static_cast<size_t>(denied), 400u);
  for (const ht::RecordedRequest& r : sent) {
    EXPECT_EQ(r.path, "/orders/1/fulfil") << "a path no capability check saw was sent";
  }
  auto rows = h_.outbox().ListEvent(key);
  ASSERT_TRUE(rows.ok());
  for (const OutboxRow& row : *rows) EXPECT_EQ(row.path, "/orders/1/fulfil");
}

// A plugin that stops, as plugin.h asks, on an ERP call the outbox still owns did not fail: the
// answer is 503 erp_pending with Retry-After (the call unanswered, then in flight on a retry),
// never 500; once the host's worker has the ERP's answer, the next delivery is answered from the
// row, and the ERP saw the call once.
TEST_F(PluginContractTest, StoppingOnACallTheOutboxOwnsIs503ErpPendingNotAFailure) {
  auto d = Dispatcher("fulfil");
  auto pipeline = Pipeline(d);
  auto server = Serve(*pipeline);
  h_.sender().down = true;
  for (int attempt = 0; attempt < 2; ++attempt) {  // unanswered, then CG_DEFERRED
    const ht::RawResponse r = Post(server->port(), SignedWire("msg_pending", "{}"));
    ASSERT_TRUE(r.ok);
    EXPECT_EQ(r.status, 503) << r.body;
    EXPECT_NE(r.body.find("erp_pending"), std::string::npos) << r.body;
    const std::string retry_after(r.headers.Get("Retry-After").value_or(""));
    EXPECT_FALSE(retry_after.empty());
    ASSERT_TRUE(!retry_after.empty() &&
                retry_after.find_first_not_of("0123456789") == std::string::npos &&
                retry_after.size() <= 3)
        << retry_after;
    EXPECT_GE(std::stoi(retry_after), 1) << retry_after;
    EXPECT_LE(std::stoi(retry_after), 300) << retry_after;
  }
  EXPECT_EQ(h_.erp().requests_total(), 0u);
  h_.sender().down = false;
  auto worker = RetryWorker::Create(h_.env);
  ASSERT_TRUE(worker.ok());
  auto drained = (*worker)->DrainPending(ht::kT0 + 3'600'000);
  ASSERT_TRUE(drained.ok());
  EXPECT_EQ(drained->answered, 1);
  const ht::RawResponse done = Post(server->port(), SignedWire("msg_pending", "{}"));
  ASSERT_TRUE(done.ok);
  EXPECT_EQ(done.status, 200) << done.body;
  EXPECT_EQ(done.body, "{\"erp\":200}");
  EXPECT_EQ(h_.erp().requests_total(), 1u);
  EXPECT_EQ(h_.AuditCount("plugin_failed"), 0u);
}

// Only what the signature covers is shown: webhook-id and webhook-timestamp (under these names
// even when the sender used svix-*). Unsigned headers — Content-Type, X-Idempotency-Key, anything
// an attacker could change on a captured delivery — never reach the plugin.
TEST_F(PluginContractTest, PluginsSeeOnlyTheAuthenticatedHeaders) {
  auto d = Dispatcher("headers_probe");
  auto pipeline = Pipeline(d);
  auto server = Serve(*pipeline);
  const int64_t ts = h_.clock.NowSeconds();
  const ht::RawResponse r = Post(
      server->port(), SignedWire("msg_headers", "{}",
                                 "Content-Type: application/json\r\nX-Idempotency-Key: forged\r\n"
                                 "X-Role: admin\r\n"));
  ASSERT_TRUE(r.ok);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, "webhook-id=msg_headers\nwebhook-timestamp=" + std::to_string(ts) + "\n");
  const std::string body = "{\"svix\":1}";
  const ht::RawResponse svix = Post(
      server->port(),
      ht::SimpleRequest(
          "POST", kPath, body,
          "svix-id: msg_svix\r\nsvix-timestamp: " + std::to_string(ts) + "\r\nsvix-signature: " +
              WebhookSignature(DecodeWebhookSecret(kHookSecret).value(), "msg_svix", ts, body) +
              "\r\nX-Role: admin\r\n"));
  ASSERT_TRUE(svix.ok);
  ASSERT_EQ(svix.status, 200) << svix.body;
  EXPECT_EQ(svix.body, "webhook-id=msg_svix\nwebhook-timestamp=" + std::to_string(ts) + "\n");
  server->Stop();
}

// What a plugin's thread-local is worth across an erp_call. Two deliveries are held inside
// erp_call together (BarrierSender). With threads each runs on its own thread and sees its own
// value; with fibers on one carrier the second delivery ran while the first was parked, and the
// first sees the second's value: thread-locals are shared by a carrier's deliveries (plugin.h,
// ARCHITECTURE.md "Execution model"; `clawguard audit` says so as listen.fibers_thread_locals).
TEST_F(PluginContractTest, WithFibersAThreadLocalIsSharedByTheDeliveriesOfACarrier) {
  for (const bool fibers : {false, true}) {
    BarrierSender barrier(h_.sender(), /*expected=*/2);
    auto d = Dispatcher("tls_probe", &barrier);
    std::unique_ptr<fiber::Carriers> carriers;
    if (fibers) carriers = std::make_unique<fiber::Carriers>(1, "cg-test-carrier");
    std::mutex mu;
    std::condition_variable cv;
    std::map<std::string, nlohmann::json> seen;
    {
      auto pipeline = Pipeline(d, carriers.get());
      const std::string suffix = fibers ? "_f" : "_t";
      for (const std::string& id : {"msg_a" + suffix, "msg_b" + suffix}) {
        const HttpRequest r = Signed(id, "{\"n\":\"" + id + "\"}");
        auto front = pipeline->Front(r);
        ASSERT_TRUE(std::holds_alternative<WebhookPipeline::Admitted>(front));
        pipeline->FinishAsync(r, std::get<WebhookPipeline::Admitted>(std::move(front)),
                              Responder([&, id](const HttpResponse& a) {
                                std::lock_guard lock(mu);
                                seen[id] = nlohmann::json::parse(a.body, nullptr, false);
                                cv.notify_all();
                              }));
      }
      std::unique_lock lock(mu);
      ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return seen.size() == 2; }));
      ASSERT_TRUE(WaitFor([&] { return pipeline->deliveries_in_flight() == 0; }));
    }
    const nlohmann::json& a = seen.at(fibers ? "msg_a_f" : "msg_a_t");
    const nlohmann::json& b = seen.at(fibers ? "msg_b_f" : "msg_b_t");
    ASSERT_TRUE(a.is_object() && b.is_object());
    if (!fibers) {
      EXPECT_EQ(a["seen"], a["mine"]);
      EXPECT_EQ(b["seen"], b["mine"]);
    } else {
      // One carrier: whichever ran first was parked while the other overwrote the thread-local.
      const bool a_first = a["seen"] != a["mine"];
      const nlohmann::json& first = a_first ? a : b;
      const nlohmann::json& second = a_first ? b : a;
      EXPECT_EQ(first["seen"], second["mine"]) << a.dump() << " " << b.dump();
      EXPECT_EQ(second["seen"], second["mine"]);
    }
  }
}

}  // namespace
}  // namespace clawguard::host
