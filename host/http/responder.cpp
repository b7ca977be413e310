// responder.cpp — see responder.h.
#include "host/http/responder.h"

#include <utility>

#include "host/http/problem.h"

namespace clawguard::host {

Responder::Responder(Deliver deliver) : state_(std::make_shared<State>()) {
  state_->deliver = std::move(deliver);
}

bool Responder::Answer(HttpResponse response) const {
  if (state_ == nullptr) return false;
  Deliver deliver;
  {
    MutexLock lock(state_->mu);
    deliver = std::move(state_->deliver);
    state_->deliver = nullptr;
  }
  if (!deliver) return false;
  deliver(std::move(response));
  return true;  // |deliver| (and what it holds of the connection) is released here
}

bool Responder::answered() const {
  if (state_ == nullptr) return true;
  MutexLock lock(state_->mu);
  return !state_->deliver;
}

Responder::State::~State() {
  // No other copy exists any more, so no lock is needed.
  if (!deliver) return;
  try {
    deliver(ProblemResponse(Reason::kInternal, "the request handler lost the answer"));
  } catch (...) {
    // A destructor must not throw; the connection then ends without an answer.
  }
}

std::optional<std::string> AnswerProblem(int status, size_t body_size) {
  if (status < 200 || status > 599) {
    return "status " + std::to_string(status) +
           " is not a final HTTP status (200..599 are accepted)";
  }
  if ((status == 204 || status == 205 || status == 304) && body_size != 0) {
    return "status " + std::to_string(status) + " carries no content, but the answer has " +
           std::to_string(body_size) + " body bytes";
  }
  return std::nullopt;
}

}  // namespace clawguard::host
