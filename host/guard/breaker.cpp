// breaker.cpp — per-key and per-endpoint circuit breakers.
#include "host/guard/breaker.h"

#include <algorithm>

#include "clawguard/strict_yaml.h"

namespace clawguard::host {
namespace {

Status CheckSpec(const BreakerSpec& spec, std::string_view which, bool probes) {
  if (spec.failures < 1 || spec.window.count() <= 0 || spec.cooldown.count() <= 0 ||
      (probes && spec.half_open_probes < 1)) {
    return Status(
        Reason::kConfigInvalid,
        "breaker." + std::string(which) + ": expected failures ≥ 1, window > 0, cooldown > 0" +
            (probes ? ", half_open_probes ≥ 1" : "") + "; found failures " +
            std::to_string(spec.failures) + ", window " + FormatDuration(spec.window) +
            ", cooldown " + FormatDuration(spec.cooldown) +
            (probes ? ", half_open_probes " + std::to_string(spec.half_open_probes) : ""));
  }
  return Status::Ok();
}

// DropOld removes failures more than |window| before |now| (the window is inclusive).
void DropOld(std::deque<int64_t>& failures, int64_t now, int64_t window) {
  while (!failures.empty() && now - failures.front() > window) failures.pop_front();
}

}  // namespace

int64_t RetryAfterSeconds(int64_t remaining_ms) {
  return std::max<int64_t>(1, (remaining_ms + 999) / 1000);
}

// ---- KeyBreaker ----

Result<std::unique_ptr<KeyBreaker>> KeyBreaker::Create(const BreakerSpec& spec, const Clock& clock,
                                                       size_t max_keys) {
  CLAWGUARD_RETURN_IF_ERROR(CheckSpec(spec, "key", /*probes=*/false));
  if (max_keys < 1) return Status(Reason::kConfigInvalid, "key breaker: expected max_keys ≥ 1");
  return std::unique_ptr<KeyBreaker>(new KeyBreaker(spec, clock, max_keys));
}

void KeyBreaker::Erase(std::map<std::string, KeyState, std::less<>>::iterator it) {
  by_expiry_.erase({it->second.expires_at, it->first});
  keys_.erase(it);
}

void KeyBreaker::Sweep(int64_t now) {
  while (!by_expiry_.empty() && by_expiry_.begin()->first <= now) {
    auto it = keys_.find(by_expiry_.begin()->second);
    if (it == keys_.end()) {
      by_expiry_.erase(by_expiry_.begin());  // cannot happen: the index mirrors the map
      continue;
    }
    Erase(it);
  }
}

void KeyBreaker::Touch(const std::string& key, KeyState& s, int64_t new_expiry) {
  by_expiry_.erase({s.expires_at, key});
  s.expires_at = new_expiry;
  by_expiry_.emplace(new_expiry, key);
}

KeyBreaker::Admission KeyBreaker::Check(std::string_view key) {
  MutexLock lock(mu_);
  const int64_t now = clock_.NowMillis();
  Sweep(now);
  auto it = keys_.find(key);
  if (it == keys_.end() || it->second.open_until <= now) return Admission{};
  return Admission{false, it->second.open_until - now};
}

KeyBreaker::Failure KeyBreaker::RecordFailure(std::string_view key) {
  MutexLock lock(mu_);
  const int64_t now = clock_.NowMillis();
  Sweep(now);
  auto it = keys_.find(key);
  if (it == keys_.end()) {
    if (keys_.size() >= max_keys_)
      Erase(keys_.find(by_expiry_.begin()->second));  // closest to expiry
    it = keys_.emplace(std::string(key), KeyState{}).first;
    it->second.expires_at = now;
    by_expiry_.emplace(now, it->first);
  }
  KeyState& s = it->second;
  if (s.open_until > now) return Failure{false, s.open_until - now};  // already open: reported once
  s.failures.push_back(now);
  DropOld(s.failures, now, window_ms_);
  if (static_cast<int>(s.failures.size()) >= failures_) {
    s.failures.clear();
    s.open_until = now + cooldown_ms_;
    Touch(it->first, s, s.open_until);
    return Failure{true, cooldown_ms_};
  }
  Touch(it->first, s, now + window_ms_ + 1);  // every failure is out of the window after this
  return Failure{};
}

void KeyBreaker::RecordSuccess(std::string_view key) {
  MutexLock lock(mu_);
  const int64_t now = clock_.NowMillis();
  auto it = keys_.find(key);
  if (it != keys_.end() && it->second.open_until <= now) Erase(it);
}

size_t KeyBreaker::TrackedKeys() {
  MutexLock lock(mu_);
  Sweep(clock_.NowMillis());
  return keys_.size();
}

size_t KeyBreaker::OpenKeys() {
  MutexLock lock(mu_);
  const int64_t now = clock_.NowMillis();
  Sweep(now);
  return static_cast<size_t>(std::count_if(
      keys_.begin(), keys_.end(), [now](const auto& kv) { return kv.second.open_until > now; }));
}

// ---- EndpointBreaker ----

std::string_view EndpointBreaker::StateName(State s) {
  return s == State::kClosed ? "closed" : s == State::kOpen ? "open" : "half_open";
}

Result<std::unique_ptr<EndpointBreaker>> EndpointBreaker::Create(const BreakerSpec& spec,
                                                                 const Clock& clock,
                                                                 size_t max_endpoints) {
  CLAWGUARD_RETURN_IF_ERROR(CheckSpec(spec, "erp", /*probes=*/true));
  if (max_endpoints < 1)
    return Status(Reason::kConfigInvalid, "endpoint breaker: expected max_endpoints ≥ 1");
  return std::unique_ptr<EndpointBreaker>(new EndpointBreaker(spec, clock, max_endpoints));
}

void EndpointBreaker::Open(EndpointState& s, int64_t now) const {
  s.state = State::kOpen;
  s.open_until = now + cooldown_ms_;
  s.failures.clear();
  s.probes_in_flight = 0;
}

void EndpointBreaker::Advance(EndpointState& s, int64_t now) const {
  if (s.state == State::kOpen && now >= s.open_until) {
    s.state = State::kHalfOpen;
    s.probes_in_flight = 0;
    s.probe_deadline = now + cooldown_ms_;
  }
  if (s.state == State::kHalfOpen && s.probes_in_flight > 0 && now >= s.probe_deadline) {
    s.probes_in_flight = 0;  // the probes' results never came: let new ones through
    s.probe_deadline = now + cooldown_ms_;
  }
  if (s.state == State::kClosed) DropOld(s.failures, now, window_ms_);
}

EndpointBreaker::EndpointState* EndpointBreaker::Find(std::string_view endpoint, bool create,
                                                      int64_t now) {
  auto it = endpoints_.find(endpoint);
  if (it != endpoints_.end()) {
    Advance(it->second, now);
    return &it->second;
  }
  if (!create) return nullptr;
  if (endpoints_.size() >= max_endpoints_) {
    // Forget closed endpoints with nothing in the window; if none, leave this one untracked.
    for (auto e = endpoints_.begin(); e != endpoints_.end();) {
      Advance(e->second, now);
      const bool idle = e->second.state == State::kClosed && e->second.failures.empty();
      e = idle ? endpoints_.erase(e) : std::next(e);
    }
    if (endpoints_.size() >= max_endpoints_) return nullptr;
  }
  return &endpoints_.emplace(std::string(endpoint), EndpointState{}).first->second;
}

EndpointBreaker::Permit EndpointBreaker::Acquire(std::string_view endpoint) {
  MutexLock lock(mu_);
  const int64_t now = clock_.NowMillis();
  EndpointState* s = Find(endpoint, /*create=*/false, now);
  if (s == nullptr || s->state == State::kClosed) return Permit{};
  if (s->state == State::kOpen) return Permit{false, false, s->open_until - now};
  if (s->probes_in_flight < probes_) {
    ++s->probes_in_flight;
    return Permit{true, true, 0};
  }
  return Permit{false, false, std::max<int64_t>(1, s->probe_deadline - now)};
}

bool EndpointBreaker::RecordFailure(std::string_view endpoint, bool probe) {
  MutexLock lock(mu_);
  const int64_t now = clock_.NowMillis();
  EndpointState* s = Find(endpoint, /*create=*/true, now);
  if (s == nullptr) return false;
  if (s->state == State::kHalfOpen) {
    if (!probe) return false;  // a call from before the opening: only probes decide now
    Open(*s, now);
    return true;
  }
  if (s->state == State::kOpen) return false;
  s->failures.push_back(now);
  if (static_cast<int>(s->failures.size()) < failures_) return false;
  Open(*s, now);
  return true;
}

void EndpointBreaker::RecordSuccess(std::string_view endpoint, bool probe) {
  MutexLock lock(mu_);
  const int64_t now = clock_.NowMillis();
  EndpointState* s = Find(endpoint, /*create=*/false, now);
  if (s == nullptr || !probe || s->state != State::kHalfOpen) return;
  s->state = State::kClosed;
  s->failures.clear();
  s->probes_in_flight = 0;
}

EndpointBreaker::State EndpointBreaker::StateOf(std::string_view endpoint) {
  MutexLock lock(mu_);
  const EndpointState* s = Find(endpoint, /*create=*/false, clock_.NowMillis());
  return s == nullptr ? State::kClosed : s->state;
}

std::vector<EndpointBreaker::Snapshot> EndpointBreaker::SnapshotAll() {
  MutexLock lock(mu_);
  const int64_t now = clock_.NowMillis();
  std::vector<Snapshot> out;
  out.reserve(endpoints_.size());
  for (auto& [name, s] : endpoints_) {
    Advance(s, now);
    out.push_back(Snapshot{name, s.state, s.state == State::kOpen ? s.open_until - now : 0,
                           s.failures.size()});
  }
  return out;
}

}  // namespace clawguard::host
