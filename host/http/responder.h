// responder.h — Responder: the answer to one request, given later and from any thread.
//
// A handler that cannot answer on the thread that received the request (HttpServer's
// Deferred::start) gets a Responder. Copies share one answer: the first Answer delivers it and
// every later Answer (of any copy) does nothing, so two parties that race to answer — a delivery
// that finished and the watchdog that gave up on it — need no other agreement. If every copy is
// destroyed unanswered, the request is answered 500 problem+json (`internal`): a lost answer is a
// bug, but never a connection that waits forever. After answering, a Responder holds nothing of
// the connection (what delivers the answer is released then), so a thread that keeps a copy —
// e.g. one stuck in a hung plugin — does not keep the connection or its server alive.
// Thread-safe.
#ifndef CLAWGUARD_HOST_HTTP_RESPONDER_H_
#define CLAWGUARD_HOST_HTTP_RESPONDER_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/mutex.h"
#include "host/http/http_types.h"

namespace clawguard::host {

class Responder {
 public:
  using Deliver = std::function<void(HttpResponse)>;

  Responder() = default;  // answers nothing (Answer returns false)
  explicit Responder(Deliver deliver);

  // Answer delivers |response| unless this request was answered already; true if it did. The
  // delivery function runs on the calling thread, outside any lock of the Responder.
  bool Answer(HttpResponse response) const;
  // answered is true once an Answer delivered (or the Responder never had anything to answer).
  bool answered() const;

 private:
  struct State {
    Mutex mu;
    Deliver deliver CLAWGUARD_GUARDED_BY(mu);  // empty once answered
    ~State();
  };
  std::shared_ptr<State> state_;
};

// AnswerProblem applies the one rule every answer a plugin gives — and so every answer the host
// stores and replays — must meet: a final status 200..599 (1xx is not a final answer; the framing
// of the HTTP layer refuses anything else), and no content with 204, 205 or 304 (RFC 9110
// §15.3.5, §15.3.6, §15.4.5: such an answer cannot carry a body, and an HTTP/1.1 writer must refuse
// to send one). It returns why |status| with |body_size| bytes of body breaks the rule, or nullopt
// when it does not. Used at the plugin's respond() (an answer that breaks it ends the delivery as a
// plugin failure, never stored) and again by the pipeline before it stores an answer. Pure.
std::optional<std::string> AnswerProblem(int status, size_t body_size);

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_HTTP_RESPONDER_H_
