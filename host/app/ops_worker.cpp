// ops_worker.cpp — one background thread with a queue of one request, stopped with a bound.
#include "host/app/ops_worker.h"

#include <algorithm>
#include <condition_variable>
#include <system_error>

#include "core/mutex.h"
#include "runtime/thread_name.h"

namespace clawguard::host {
namespace {

// kMaxStopWait caps a bound so that now + bound cannot overflow the steady clock (a day).
constexpr std::chrono::milliseconds kMaxStopWait{86'400'000};

}  // namespace

// Shared is what the thread uses; it lives as long as the thread or the worker, whichever is
// longer (an abandoned thread keeps it).
struct OpsWorker::Shared {
  Shared(std::string n, Job j, const Clock& c) : name(std::move(n)), job(std::move(j)), clock(c) {}
  const std::string name;
  const Job job;
  const Clock& clock;
  std::atomic<bool> stop{false};
  Mutex mu;
  std::condition_variable wake;
  std::condition_variable ended;
  bool queued CLAWGUARD_GUARDED_BY(mu) = false;
  bool stopping CLAWGUARD_GUARDED_BY(mu) = false;
  bool finished CLAWGUARD_GUARDED_BY(mu) = false;  // the thread left its loop
  Stats stats CLAWGUARD_GUARDED_BY(mu);
};

Result<std::unique_ptr<OpsWorker>> OpsWorker::Start(std::string name, Job job, const Clock& clock) {
  if (!job) return Status(Reason::kInternal, "background worker " + name + ": no job");
  auto shared = std::make_shared<Shared>(std::move(name), std::move(job), clock);
  std::unique_ptr<OpsWorker> worker(new OpsWorker(shared));
  try {
    worker->thread_ = std::thread([shared] { Run(shared); });
  } catch (const std::system_error& e) {
    return Status(Reason::kInternal,
                  "background worker " + shared->name + ": cannot start its thread: " + e.what());
  }
  return worker;
}

void OpsWorker::Run(const std::shared_ptr<Shared>& s) {
  NameThisThread(s->name);
  MutexLock lock(s->mu);
  while (true) {
    s->mu.Wait(s->wake, [&]() CLAWGUARD_REQUIRES(s->mu) { return s->queued || s->stopping; });
    if (s->stopping) break;
    s->queued = false;
    s->stats.busy = true;
    s->stats.busy_since_ms = s->clock.NowMillis();
    lock.Unlock();
    s->job(s->stop);
    lock.Lock();
    s->stats.busy = false;
    ++s->stats.runs;
  }
  s->finished = true;
  s->ended.notify_all();
}

OpsWorker::~OpsWorker() { (void)Stop(std::chrono::milliseconds(kOpsWorkerDefaultStopMs)); }

bool OpsWorker::Post() {
  {
    MutexLock lock(shared_->mu);
    if (shared_->stopping) return false;
    if (shared_->queued) {
      ++shared_->stats.coalesced;
      return false;
    }
    shared_->queued = true;
  }
  shared_->wake.notify_one();
  return true;
}

OpsWorker::Stats OpsWorker::stats() const {
  MutexLock lock(shared_->mu);
  return shared_->stats;
}

void OpsWorker::RequestStop() {
  {
    MutexLock lock(shared_->mu);
    shared_->stopping = true;
    shared_->queued = false;
    shared_->stop.store(true);
  }
  shared_->wake.notify_all();
}

bool OpsWorker::Stop(std::chrono::milliseconds bound) {
  if (stopped_) return joined_;
  stopped_ = true;
  RequestStop();
  bool finished = false;
  {
    MutexLock lock(shared_->mu);
    finished = shared_->mu.WaitFor(
        shared_->ended, std::clamp(bound, std::chrono::milliseconds(0), kMaxStopWait),
        [&]() CLAWGUARD_REQUIRES(shared_->mu) { return shared_->finished; });
    if (!finished) shared_->stats.abandoned = true;
  }
  if (finished) {
    thread_.join();
  } else {
    thread_.detach();  // it holds |shared_| and ends by itself once its item ends
  }
  joined_ = finished;
  return finished;
}

}  // namespace clawguard::host
