// dispatch_watchdog.h — internal to host/dispatch: PluginDispatcher::Watchdog, included by
// plugin_dispatch.cpp only.
#ifndef CLAWGUARD_HOST_DISPATCH_DISPATCH_WATCHDOG_H_
#define CLAWGUARD_HOST_DISPATCH_DISPATCH_WATCHDOG_H_

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "host/dispatch/plugin_call.h"
#include "host/dispatch/plugin_dispatch.h"
#include "runtime/fiber.h"
#include "runtime/spare_threads.h"
#include "runtime/thread_name.h"

namespace clawguard::host {

// Watchdog enforces handler_timeout and renews the lease of the deliveries a dispatcher runs on
// their callers' threads (DispatchContext::on_abandon). One thread sleeps until the earliest
// deadline or renewal of the watched deliveries; what is due then runs as a task on a spare
// thread (a renewal is a store round trip, giving up calls the caller's on_abandon, which stores
// and answers), so one slow store call delays no other delivery's deadline. Deliveries start in
// time order with the same timeout, so a new watch is never earlier than the planned wake-up and
// adding one wakes nobody (except an idle watchdog); a finished delivery is just removed.
struct PluginDispatcher::Watchdog : std::enable_shared_from_this<PluginDispatcher::Watchdog> {
  using SteadyClock = std::chrono::steady_clock;
  struct Watch {
    std::shared_ptr<cg_call> call;
    const DispatchContext* ctx = nullptr;  // valid until Finish returns
    SteadyClock::time_point deadline;
    SteadyClock::time_point next_renew;
    // Guarded by Watchdog::mu (which the analysis cannot name from here: the functions that
    // touch these are annotated instead):
    bool done = false;  // the plugin returned: no task is started any more
    int busy = 0;       // tasks running for this watch
    std::condition_variable idle;
    std::multimap<SteadyClock::time_point, std::shared_ptr<Watch>>::iterator where;
    bool queued = false;  // |where| is valid
    // Set by the task that gave up (before on_abandon; read after Finish).
    PluginOutcome outcome;
  };

  Watchdog(std::chrono::milliseconds renew_period, AuditFn audit_fn)
      : renew_every(renew_period), audit(std::move(audit_fn)) {}

  // Start runs the watchdog's thread; it keeps the watchdog alive until Stop.
  void Start() {
    std::thread([self = shared_from_this()] { self->Loop(); }).detach();
  }
  void Stop() CLAWGUARD_EXCLUDES(mu) {
    {
      MutexLock lock(mu);
      stopping = true;
    }
    cv.notify_all();
  }

  void Add(const std::shared_ptr<Watch>& w) CLAWGUARD_EXCLUDES(mu) {
    bool wake = false;
    {
      MutexLock lock(mu);
      const SteadyClock::time_point at = std::min(w->deadline, w->next_renew);
      Queue(w, at);
      wake = at < planned;
    }
    if (wake) cv.notify_one();
  }

  // Finish ends the watch: no task starts for it any more, and a running one is waited for.
  void Finish(const std::shared_ptr<Watch>& w) CLAWGUARD_EXCLUDES(mu) {
    MutexLock lock(mu);
    w->done = true;
    if (w->queued) {
      due.erase(w->where);
      w->queued = false;
    }
    if (fiber::Current() == nullptr) {
      mu.Wait(w->idle, [&] { return w->busy == 0; });
      return;
    }
    // On a fiber: a renewal or give-up runs on a task thread for at most a store write; poll for
    // it rather than hold the carrier's other fibers in a condition variable.
    while (w->busy != 0) {
      lock.Unlock();
      fiber::SleepFor(std::chrono::microseconds(200));
      lock.Lock();
    }
  }

 private:
  void Queue(const std::shared_ptr<Watch>& w, SteadyClock::time_point at) CLAWGUARD_REQUIRES(mu) {
    w->where = due.emplace(at, w);
    w->queued = true;
  }

  void Loop() CLAWGUARD_EXCLUDES(mu) {
    NameThisThread("cg-watchdog");
    MutexLock lock(mu);
    while (!stopping) {
      if (due.empty()) {
        planned = SteadyClock::time_point::max();
        mu.Wait(cv);
        continue;
      }
      planned = due.begin()->first;
      if (SteadyClock::now() < planned) {
        mu.WaitUntil(cv, planned);
        continue;
      }
      std::vector<std::shared_ptr<Watch>> ripe;
      const auto now = SteadyClock::now();
      while (!due.empty() && due.begin()->first <= now) {
        std::shared_ptr<Watch> w = due.begin()->second;
        due.erase(due.begin());
        w->queued = false;
        ++w->busy;
        ripe.push_back(std::move(w));
      }
      lock.Unlock();
      for (auto& w : ripe) {
        try {
          tasks.Run([self = shared_from_this(), w] { self->Check(w); });
        } catch (...) {
          Check(w);  // no thread to spare: do it here
        }
      }
      lock.Lock();
    }
  }

  // Check runs for a due watch: give up after the deadline, else renew the lease.
  void Check(const std::shared_ptr<Watch>& w) CLAWGUARD_EXCLUDES(mu) {
    const DispatchContext& ctx = *w->ctx;
    if (SteadyClock::now() >= w->deadline) {
      GiveUp(*w, PluginOutcome::TimedOut(kTimedOutDetail));
    } else if (ctx.renew_lease && !ctx.renew_lease()) {
      GiveUp(*w, PluginOutcome::Failed(kLeaseLostDetail));
    } else {
      bool wake = false;
      {
        MutexLock lock(mu);
        if (!w->done) {
          w->next_renew = SteadyClock::now() + renew_every;
          const SteadyClock::time_point at = std::min(w->deadline, w->next_renew);
          Queue(w, at);
          wake = at < planned;  // e.g. the watchdog went idle while this task ran
        }
      }
      if (wake) cv.notify_one();
    }
    MutexLock lock(mu);
    if (--w->busy == 0) w->idle.notify_all();
  }

  void GiveUp(Watch& w, PluginOutcome outcome) {
    {
      MutexLock lock(w.call->mu);
      if (w.call->finished) return;  // the plugin returned first: its result stands
      w.call->abandoned.store(true);
    }
    (void)Audited(audit, *w.ctx, DispatchReport{outcome, {}});
    outcome.abandoned = true;
    w.outcome = outcome;
    try {
      w.ctx->on_abandon(outcome);
    } catch (...) {
      // The caller's answer path must not throw; nothing more can be done here.
    }
  }

  const std::chrono::milliseconds renew_every;
  const AuditFn audit;
  runtime::SpareThreads tasks{std::chrono::seconds(10), "cg-watchdog"};
  Mutex mu;
  std::condition_variable cv;
  std::multimap<SteadyClock::time_point, std::shared_ptr<Watch>> due CLAWGUARD_GUARDED_BY(mu);
  SteadyClock::time_point planned CLAWGUARD_GUARDED_BY(mu) = SteadyClock::time_point::max();
  bool stopping CLAWGUARD_GUARDED_BY(mu) = false;
};

}  // namespace clawguard::host

#endif  // CLAWGUARD_HOST_DISPATCH_DISPATCH_WATCHDOG_H_
