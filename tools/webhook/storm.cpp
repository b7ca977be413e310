// storm.cpp — `clawguard-webhook storm N`: a platform's retry storm of one event (see modes.h).
#include <charconv>
#include <latch>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "webhook/modes.h"

namespace clawguard::tools {
namespace {

// Outcome is what one delivery ended with.
struct Outcome {
  int first_status = 0;
  int retried_409 = 0;
  std::optional<host::ErpReply> reply;  // the final answer
  std::string error;                    // set when there was no answer
};

// RetryAfterSeconds reads a delta-seconds Retry-After (RFC 9110 §10.2.3); 1 when absent or odd.
int64_t RetryAfterSeconds(const host::ErpReply& reply) {
  const std::string_view v = reply.headers.Get("Retry-After").value_or("1");
  int64_t s = 1;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), s);
  return (ec != std::errc() || p != v.data() + v.size() || s < 1) ? 1 : s;
}

Outcome Deliver(WebhookSender& sender, const StormOptions& options, const Clock& clock) {
  Outcome out;
  for (int attempt = 1;; ++attempt) {
    auto reply = sender.Send(sender.Sign(options.id, clock.NowSeconds(), options.body));
    if (!reply.ok()) {
      out.error = reply.error().ToString();
      return out;
    }
    if (attempt == 1) out.first_status = reply->status;
    if (reply->status != 409 || attempt >= options.max_attempts) {
      out.reply = std::move(reply).value();
      return out;
    }
    ++out.retried_409;
    const auto wait = std::min<std::chrono::seconds>(
        std::chrono::seconds(RetryAfterSeconds(*reply)), options.max_wait);
    std::this_thread::sleep_for(
        wait);  // a platform's retry: a fresh timestamp and signature follow
  }
}

bool SameAnswer(const host::ErpReply& a, const host::ErpReply& b) {
  return a.status == b.status && a.body == b.body &&
         a.headers.Get("Content-Type").value_or("") == b.headers.Get("Content-Type").value_or("");
}

}  // namespace

nlohmann::json RunStorm(WebhookSender& sender, const StormOptions& options, const Clock& clock) {
  std::vector<Outcome> outcomes(static_cast<size_t>(options.deliveries));
  {
    std::latch start(options.deliveries);
    std::vector<std::jthread> threads;
    for (size_t i = 0; i < outcomes.size(); ++i) {
      threads.emplace_back([&, i] {
        start.arrive_and_wait();  // all at once, as a storm arrives
        outcomes[i] = Deliver(sender, options, clock);
      });
    }
  }
  std::map<std::string, int> first_statuses, final_statuses;
  int retried = 0, processed = 0, replayed = 0, failures = 0;
  nlohmann::json errors = nlohmann::json::array();
  const host::ErpReply* reference = nullptr;
  for (const Outcome& o : outcomes) {
    retried += o.retried_409;
    if (!o.reply) {
      ++failures;
      if (errors.size() < 5) errors.push_back(o.error);
      continue;
    }
    ++first_statuses[std::to_string(o.first_status)];
    ++final_statuses[std::to_string(o.reply->status)];
    if (o.reply->headers.Get("Idempotent-Replayed").value_or("") == "true") {
      ++replayed;
    } else if (o.reply->status >= 200 && o.reply->status < 300) {
      ++processed;
      reference = &*o.reply;
    }
  }
  bool identical = true;
  for (const Outcome& o : outcomes) {
    if (!o.reply || o.reply->headers.Get("Idempotent-Replayed").value_or("") != "true") continue;
    if (reference == nullptr) reference = &*o.reply;  // the key was completed before the storm
    identical = identical && SameAnswer(*o.reply, *reference);
  }
  nlohmann::json summary = {{"deliveries", options.deliveries},
                            {"first_statuses", first_statuses},
                            {"final_statuses", final_statuses},
                            {"retried_409", retried},
                            {"processed", processed},
                            {"replayed", replayed},
                            {"replays_identical", identical && replayed > 0},
                            {"failures", failures},
                            {"errors", errors}};
  summary["reference"] = reference == nullptr ? nlohmann::json(nullptr)
                                              : nlohmann::json{{"status", reference->status},
                                                               {"body", reference->body}};
  return summary;
}

}  // namespace clawguard::tools
