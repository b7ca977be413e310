// test_erp_server.cpp — see test_erp_server.h.
#include "support/test_erp_server.h"

#include <utility>

namespace clawguard::host::testing {

Result<std::unique_ptr<TestErpServer>> TestErpServer::Create(TestErpOptions options) {
  std::unique_ptr<TestErpServer> erp(new TestErpServer());
  erp->tls_ = options.tls.has_value();
  ServerOptions server_options;
  server_options.address = "127.0.0.1:0";
  server_options.workers = options.workers;
  server_options.tls = std::move(options.tls);
  TestErpServer* self = erp.get();
  CLAWGUARD_ASSIGN_OR_RETURN(
      erp->server_, HttpServer::Create(std::move(server_options),
                                       [self](const HttpRequest& r) { return self->Handle(r); }));
  CLAWGUARD_RETURN_IF_ERROR(erp->server_->Start());
  return erp;
}

TestErpServer::~TestErpServer() { Stop(); }

void TestErpServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (server_) server_->Stop();
}

std::string TestErpServer::base_url() const {
  return (tls_ ? "https://localhost:" : "http://127.0.0.1:") + std::to_string(port());
}

void TestErpServer::SetAnswer(const std::string& path, ErpAnswer answer) {
  std::lock_guard<std::mutex> lock(mu_);
  answers_[path] = std::move(answer);
}

HttpResponse TestErpServer::Handle(const HttpRequest& request) {
  std::unique_lock<std::mutex> lock(mu_);
  RecordedRequest record{request.method, request.target, request.headers, request.body, false};
  const std::optional<std::string_view> key_view = request.headers.Get("Idempotency-Key");
  const std::optional<std::string> key =
      key_view ? std::optional<std::string>(std::string(*key_view)) : std::nullopt;
  if (key) {
    auto stored = stored_.find(*key);
    if (stored != stored_.end()) {
      record.duplicate = true;
      requests_.push_back(std::move(record));
      ++duplicates_;
      return stored->second;
    }
  }
  requests_.push_back(std::move(record));
  auto it = answers_.find(request.target);
  const ErpAnswer answer = it == answers_.end() ? ErpAnswer{} : it->second;
  if (answer.close_connection) return HttpResponse{kAbortConnection, {}, {}};

  HttpResponse response;
  response.status = answer.status;
  response.headers.Set("Content-Type", answer.content_type);
  if (answer.retry_after) response.headers.Set("Retry-After", *answer.retry_after);
  response.body = answer.body;
  if (answer.status >= 200 && answer.status < 300) {
    ++effects_by_path_[request.target];
    if (key) {
      ++effects_by_key_[*key];
      stored_[*key] = response;
    }
  }
  if (answer.delay.count() > 0) {
    // The effect has happened; only the answer is late (the case retries with a key exist for).
    wake_.wait_for(lock, answer.delay, [this] { return stopping_; });
  }
  return response;
}

std::vector<RecordedRequest> TestErpServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

size_t TestErpServer::requests_total() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_.size();
}

size_t TestErpServer::duplicates() const {
  std::lock_guard<std::mutex> lock(mu_);
  return duplicates_;
}

size_t TestErpServer::effects(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = effects_by_path_.find(path);
  return it == effects_by_path_.end() ? 0 : it->second;
}

size_t TestErpServer::effects_total() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [path, count] : effects_by_path_) n += count;
  return n;
}

size_t TestErpServer::effects_for_key(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = effects_by_key_.find(key);
  return it == effects_by_key_.end() ? 0 : it->second;
}

bool TestErpServer::AtMostOneEffectPerKey() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, count] : effects_by_key_) {
    if (count > 1) return false;
  }
  return true;
}

}  // namespace clawguard::host::testing
