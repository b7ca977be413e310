// erp_client_tls_test.cpp — ErpClient's keep-alive pool against a real ERP that answers a request
// twice (tools/hostile_erp), over plain HTTP and over https with a certificate from a test CA.
// Over TLS the second answer can hide where a socket check does not look: decrypted inside
// OpenSSL, or still ciphertext in the TLS layer's input; a connection with anything there is
// never reused, exactly as a plain connection with bytes after its answer. Each case runs on both
// transports with the same expectations:
//   - every reply is its own call's answer (the ERP names the Idempotency-Key in it);
//   - bytes after an answer or on an idle connection close it and suspend keep-alive, so every
//     later call gets a connection of its own (counted at the ERP);
//   - a well-behaved ERP keeps one connection, and an ERP that closes a kept-alive connection
//     (over TLS with a close_notify) does not suspend keep-alive.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "host/erp/erp_client.h"
#include "hostile_erp/hostile_erp.h"
#include "support/temp_dir.h"
#include "support/test_pki.h"

namespace clawguard::host {
namespace {

using tools::HostileErp;
using tools::HostileMode;

constexpr int kCalls = 12;

struct Transport {
  const char* name;
  bool tls;
};

void PrintTo(const Transport& t, std::ostream* os) { *os << t.name; }

class ErpClientDoubleAnswerTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    if (GetParam().tls) {
      std::string error;
      ASSERT_TRUE(testing::MakeTestPki(dir_.path().string(), "erp", &pki_, &error)) << error;
    }
  }

  // Start runs a hostile ERP in |mode| (https for the Tls transport) and a client for it.
  void Start(HostileMode mode, int hostile_requests = 0, int close_after_answers = 0) {
    tools::HostileErpOptions eo;
    eo.mode = mode;
    eo.hostile_requests = hostile_requests;
    eo.close_after_answers = close_after_answers;
    if (GetParam().tls) {
      eo.tls_cert = pki_.leaf_cert;
      eo.tls_key = pki_.leaf_key;
    }
    auto erp = HostileErp::Start(eo);
    ASSERT_TRUE(erp.ok()) << erp.error().ToString();
    erp_ = std::move(erp).value();
    ASSERT_EQ(erp_->base_url().starts_with("https://"), GetParam().tls) << erp_->base_url();
    ErpClientOptions co;
    co.base_url = erp_->base_url();
    co.timeout = std::chrono::seconds(5);
    co.ca_file = pki_.ca_cert;
    auto client = ErpClient::Create(std::move(co));
    ASSERT_TRUE(client.ok()) << client.error().ToString();
    client_ = std::move(client).value();
  }

  // Call sends one keyed call and checks that its reply is the ERP's answer for |key|.
  void Call(const std::string& key) {
    auto reply = client_->Send(
        "POST", "/orders/1/fulfil",
        HttpHeaders{{"Idempotency-Key", key}, {"Content-Type", "application/json"}}, "{}");
    ASSERT_TRUE(reply.ok()) << key << ": " << reply.error().ToString();
    EXPECT_EQ(reply->status, 200) << key;
    const auto body = nlohmann::json::parse(reply->body, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(body.is_object()) << key << ": " << reply->body;
    EXPECT_EQ(body.value("key", ""), key) << "the reply is another call's answer: " << reply->body;
  }

  // WaitForExtraAnswers waits until the ERP has written |n| second answers whole (the ERP's own
  // count of an event, not a clock: a loopback send is in the client's socket when it returns).
  void WaitForExtraAnswers(size_t n) {
    for (int i = 0; i < 10'000 && erp_->Stats().extra_answers < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_GE(erp_->Stats().extra_answers, n) << erp_->StatsJson();
  }

  void TearDown() override {
    client_.reset();
    if (erp_) erp_->Stop();
  }

  clawguard::testing::TempDir dir_;
  testing::TestPki pki_;
  std::unique_ptr<HostileErp> erp_;
  std::unique_ptr<ErpClient> client_;
};

// Both answers in one write (over TLS one record): the second one is read with the first, into the
// client's buffer or left decrypted inside OpenSSL.
TEST_P(ErpClientDoubleAnswerTest, EveryReplyIsItsOwnAnswerWhenEachAnswerComesTwiceInOneWrite) {
  ASSERT_NO_FATAL_FAILURE(Start(HostileMode::kDoubleAnswer));
  for (int i = 0; i < kCalls; ++i) ASSERT_NO_FATAL_FAILURE(Call("one-write-" + std::to_string(i)));
  const auto s = erp_->Stats();
  EXPECT_EQ(s.requests, static_cast<size_t>(kCalls)) << erp_->StatsJson();
  EXPECT_EQ(s.effects, static_cast<size_t>(kCalls)) << erp_->StatsJson();
  EXPECT_EQ(s.connections, static_cast<size_t>(kCalls))
      << "a connection with a second answer was reused: " << erp_->StatsJson();
}

// Two writes that arrive together (over TLS two records): the second record sits as ciphertext in
// the TLS layer's input (or in OpenSSL's record buffer) when the first answer is complete — in
// neither the client's buffer nor the socket.
TEST_P(ErpClientDoubleAnswerTest, EveryReplyIsItsOwnAnswerWhenEachAnswerComesTwiceInTwoWrites) {
  ASSERT_NO_FATAL_FAILURE(Start(HostileMode::kDoubleAnswerTwoWrites));
  for (int i = 0; i < kCalls; ++i) ASSERT_NO_FATAL_FAILURE(Call("two-writes-" + std::to_string(i)));
  const auto s = erp_->Stats();
  EXPECT_EQ(s.requests, static_cast<size_t>(kCalls)) << erp_->StatsJson();
  EXPECT_EQ(s.effects, static_cast<size_t>(kCalls)) << erp_->StatsJson();
  EXPECT_EQ(s.connections, static_cast<size_t>(kCalls))
      << "a connection with a second answer was reused: " << erp_->StatsJson();
}

// Only the first call is answered twice; the later ones (the same key, replayed once each) are
// well-behaved. Keep-alive is suspended after the stray answer, so none of them is pooled.
TEST_P(ErpClientDoubleAnswerTest, ASecondAnswerAfterTheFirstSuspendsKeepAlive) {
  ASSERT_NO_FATAL_FAILURE(Start(HostileMode::kDoubleAnswerTwoWrites, /*hostile_requests=*/1));
  for (int i = 0; i < kCalls; ++i) ASSERT_NO_FATAL_FAILURE(Call("suspend"));
  ASSERT_NO_FATAL_FAILURE(WaitForExtraAnswers(1));  // the ERP counts it after both writes
  const auto s = erp_->Stats();
  EXPECT_EQ(s.extra_answers, 1u) << erp_->StatsJson();
  EXPECT_EQ(s.effects, 1u) << erp_->StatsJson();
  EXPECT_EQ(s.connections, static_cast<size_t>(kCalls))
      << "keep-alive was not suspended: " << erp_->StatsJson();
}

// The second answer arrives on the pooled connection after the call is over (over TLS a record the
// raw socket shows as ciphertext): found before reuse, and keep-alive is suspended as for plain.
TEST_P(ErpClientDoubleAnswerTest,
       ASecondAnswerOnAnIdleConnectionIsFoundBeforeReuseAndSuspendsKeepAlive) {
  ASSERT_NO_FATAL_FAILURE(Start(HostileMode::kLateSecondAnswer, /*hostile_requests=*/1));
  ASSERT_NO_FATAL_FAILURE(Call("late"));
  ASSERT_NO_FATAL_FAILURE(WaitForExtraAnswers(1));
  for (int i = 1; i < kCalls; ++i) ASSERT_NO_FATAL_FAILURE(Call("late"));
  const auto s = erp_->Stats();
  EXPECT_EQ(s.effects, 1u) << erp_->StatsJson();
  // Every call after the stray answer on a connection of its own; at most one reuse, should the
  // kernel hand the late answer to the client's socket only after the second call took it.
  EXPECT_GE(s.connections, static_cast<size_t>(kCalls - 1))
      << "keep-alive was not suspended: " << erp_->StatsJson();
}

// A well-behaved ERP: one connection for every call (over TLS 1.3 the session tickets that follow
// the handshake are no stray data).
TEST_P(ErpClientDoubleAnswerTest, AWellBehavedErpKeepsOneConnection) {
  ASSERT_NO_FATAL_FAILURE(Start(HostileMode::kNormal));
  for (int i = 0; i < kCalls; ++i) ASSERT_NO_FATAL_FAILURE(Call("normal-" + std::to_string(i)));
  EXPECT_EQ(erp_->Stats().connections, 1u) << erp_->StatsJson();
}

// The ERP closes each connection after two answers without saying so (over TLS: close_notify,
// then FIN), as an idle timeout does: the client drops it as closed, not as a misbehaving peer, so
// keep-alive stays on and each new connection serves two calls again.
TEST_P(ErpClientDoubleAnswerTest, AnUnannouncedCloseIsNoStrayDataAndKeepsKeepAlive) {
  ASSERT_NO_FATAL_FAILURE(
      Start(HostileMode::kNormal, /*hostile_requests=*/0, /*close_after_answers=*/2));
  for (int i = 0; i < kCalls; ++i) ASSERT_NO_FATAL_FAILURE(Call("closing-" + std::to_string(i)));
  const auto s = erp_->Stats();
  EXPECT_EQ(s.requests, static_cast<size_t>(kCalls)) << erp_->StatsJson();
  EXPECT_EQ(s.connections, static_cast<size_t>(kCalls / 2)) << erp_->StatsJson();
}

const Transport kTransports[] = {{"Plain", false}, {"Tls", true}};

INSTANTIATE_TEST_SUITE_P(Transports, ErpClientDoubleAnswerTest, ::testing::ValuesIn(kTransports),
                         [](const ::testing::TestParamInfo<Transport>& i) {
                           return std::string(i.param.name);
                         });

}  // namespace
}  // namespace clawguard::host
