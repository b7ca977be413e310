// mutex.h — Mutex and SharedMutex: std::mutex and std::shared_mutex with the annotations of
// core/thread_annotations.h, so that Clang's -Wthread-safety checks every member marked
// CLAWGUARD_GUARDED_BY(mu_) is touched only with mu_ held. libstdc++'s own mutexes and lock
// guards carry no annotations; the analysis sees nothing through them.
//
// MutexLock holds a Mutex for its scope (WriterMutexLock / ReaderMutexLock a SharedMutex).
// Waiting on a std::condition_variable goes through Mutex::Wait, WaitFor and WaitUntil, which
// the caller calls with the Mutex held and which return with it held again.
//
// Internal (not installed): for the in-tree libraries and their tests. Thread-safe, as locks are.
#ifndef CLAWGUARD_CORE_MUTEX_H_
#define CLAWGUARD_CORE_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include "core/thread_annotations.h"

namespace clawguard {

// Mutex is an exclusive lock. Prefer MutexLock to calling Lock and Unlock.
class CLAWGUARD_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() CLAWGUARD_ACQUIRE() { mu_.lock(); }
  void Unlock() CLAWGUARD_RELEASE() { mu_.unlock(); }
  // TryLock takes the lock if it is free and says whether it did.
  bool TryLock() CLAWGUARD_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // AssertHeld tells the analysis that the caller holds the lock where it cannot see it taken
  // (a callback run under the lock). It checks nothing at run time.
  void AssertHeld() const CLAWGUARD_ASSERT_CAPABILITY(this) {}

  // Wait blocks on |cv| until |pred| holds (checked with the lock held); the lock is released
  // while blocked. A predicate that reads guarded members is annotated as needing this Mutex:
  // `[this]() CLAWGUARD_REQUIRES(mu_) { return done_; }`.
  template <class Pred>
  void Wait(std::condition_variable& cv, Pred pred) CLAWGUARD_REQUIRES(this) {
    std::unique_lock<std::mutex> lock(mu_, std::adopt_lock);
    KeepOnThrow(lock, [&] { cv.wait(lock, std::move(pred)); });
    lock.release();  // the caller still owns the lock
  }
  // Wait without a predicate returns after one wakeup, which may be spurious.
  void Wait(std::condition_variable& cv) CLAWGUARD_REQUIRES(this) {
    std::unique_lock<std::mutex> lock(mu_, std::adopt_lock);
    cv.wait(lock);
    lock.release();
  }
  // WaitFor is Wait for at most |timeout|; it returns pred() at the end.
  template <class Rep, class Period, class Pred>
  bool WaitFor(std::condition_variable& cv, const std::chrono::duration<Rep, Period>& timeout,
               Pred pred) CLAWGUARD_REQUIRES(this) {
    std::unique_lock<std::mutex> lock(mu_, std::adopt_lock);
    bool ok = false;
    KeepOnThrow(lock, [&] { ok = cv.wait_for(lock, timeout, std::move(pred)); });
    lock.release();
    return ok;
  }
  // WaitUntil is Wait until |deadline| at the latest; it returns pred() at the end.
  template <class Clock, class Duration, class Pred>
  bool WaitUntil(std::condition_variable& cv,
                 const std::chrono::time_point<Clock, Duration>& deadline, Pred pred)
      CLAWGUARD_REQUIRES(this) {
    std::unique_lock<std::mutex> lock(mu_, std::adopt_lock);
    bool ok = false;
    KeepOnThrow(lock, [&] { ok = cv.wait_until(lock, deadline, std::move(pred)); });
    lock.release();
    return ok;
  }
  // WaitUntil without a predicate: one wakeup (or a spurious one), or the deadline.
  template <class Clock, class Duration>
  std::cv_status WaitUntil(std::condition_variable& cv,
                           const std::chrono::time_point<Clock, Duration>& deadline)
      CLAWGUARD_REQUIRES(this) {
    std::unique_lock<std::mutex> lock(mu_, std::adopt_lock);
    std::cv_status status = std::cv_status::no_timeout;
    KeepOnThrow(lock, [&] { status = cv.wait_until(lock, deadline); });
    lock.release();
    return status;
  }

 private:
  // KeepOnThrow runs a wait on |lock| (the caller's lock, adopted). A wait or a predicate that
  // throws leaves the lock held (the standard re-takes it first); ownership then goes back to the
  // caller's MutexLock before the exception leaves, so the lock is released once, not twice.
  template <class Fn>
  static void KeepOnThrow(std::unique_lock<std::mutex>& lock, Fn&& wait) {
    try {
      wait();
    } catch (...) {
      if (lock.owns_lock()) lock.release();
      throw;
    }
  }

  std::mutex mu_;
};

// MutexLock holds |mu| from construction to destruction. Unlock and Lock drop and take it back
// inside the scope; the destructor releases it only if it is held. Neither copyable nor movable.
class CLAWGUARD_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) CLAWGUARD_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() CLAWGUARD_RELEASE() {
    if (held_) mu_.Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() CLAWGUARD_RELEASE() {
    mu_.Unlock();
    held_ = false;
  }
  void Lock() CLAWGUARD_ACQUIRE() {
    mu_.Lock();
    held_ = true;
  }

 private:
  Mutex& mu_;
  bool held_ = true;
};

// SharedMutex is a readers-writer lock: one writer (Lock) or any number of readers (LockShared).
class CLAWGUARD_CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() CLAWGUARD_ACQUIRE() { mu_.lock(); }
  void Unlock() CLAWGUARD_RELEASE() { mu_.unlock(); }
  void LockShared() CLAWGUARD_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() CLAWGUARD_RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// WriterMutexLock holds |mu| exclusively for its scope.
class CLAWGUARD_SCOPED_CAPABILITY WriterMutexLock {
 public:
  explicit WriterMutexLock(SharedMutex& mu) CLAWGUARD_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~WriterMutexLock() CLAWGUARD_RELEASE() { mu_.Unlock(); }
  WriterMutexLock(const WriterMutexLock&) = delete;
  WriterMutexLock& operator=(const WriterMutexLock&) = delete;

 private:
  SharedMutex& mu_;
};

// ReaderMutexLock holds |mu| shared for its scope.
class CLAWGUARD_SCOPED_CAPABILITY ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex& mu) CLAWGUARD_ACQUIRE_SHARED(mu) : mu_(mu) {
    mu_.LockShared();
  }
  ~ReaderMutexLock() CLAWGUARD_RELEASE() { mu_.UnlockShared(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  SharedMutex& mu_;
};

}  // namespace clawguard

#endif  // CLAWGUARD_CORE_MUTEX_H_
