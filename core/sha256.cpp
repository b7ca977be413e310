// sha256.cpp — SHA-256 on EVP (SHA-NI where the CPU has it).
#include "clawguard/sha256.h"

#include <pthread.h>

#include <condition_variable>
#include <new>
#include <system_error>
#include <thread>

#include "clawguard/encoding.h"
#include "clawguard/error.h"
#include "core/mutex.h"

namespace clawguard {
namespace {

// The SHA-256 implementation, fetched once. EVP_sha256() in an init makes OpenSSL 3 look the
// algorithm up in the provider store on every call (name lookups, a reference count, a lock):
// most of the cost of hashing a short input such as an event key's fields. Never freed.
const EVP_MD* Sha256Md() {
  static const EVP_MD* const md = [] {
    EVP_MD* m = EVP_MD_fetch(nullptr, "SHA2-256", nullptr);
    CLAWGUARD_CHECK(m != nullptr);
    return m;
  }();
  return md;
}

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  CLAWGUARD_CHECK(ctx_ != nullptr);
  CLAWGUARD_CHECK(EVP_DigestInit_ex(ctx_.get(), Sha256Md(), nullptr) == 1);
}

void Sha256::Update(std::string_view bytes) {
  CLAWGUARD_CHECK(EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size()) == 1);
}

Sha256Digest Sha256::Finish() {
  Sha256Digest d{};
  unsigned int len = 0;
  CLAWGUARD_CHECK(EVP_DigestFinal_ex(ctx_.get(), d.data(), &len) == 1 && len == d.size());
  return d;
}

struct Sha256Behind::Shared {
  Mutex mu;
  std::condition_variable cv;
  std::string_view published CLAWGUARD_GUARDED_BY(mu);  // the final prefix of the producer's buffer
  size_t hashed CLAWGUARD_GUARDED_BY(mu) = 0;           // how much of it is hashed
  bool stop CLAWGUARD_GUARDED_BY(mu) = false;           // hash what is left, then return
  bool abandon CLAWGUARD_GUARDED_BY(mu) = false;  // return at once (the destructor, without Finish)
  std::thread thread;
};

Sha256Behind::Sha256Behind(uint64_t expected_size) {
  if (expected_size < kInlineBelow) return;
  try {
    auto shared = std::make_unique<Shared>();
    shared_ = std::move(shared);
    shared_->thread = std::thread([this] { Loop(); });
  } catch (const std::system_error&) {
    shared_.reset();  // no thread: hash inline
  } catch (const std::bad_alloc&) {
    shared_.reset();
  }
}

Sha256Behind::~Sha256Behind() {
  if (shared_ == nullptr) return;
  {
    MutexLock lock(shared_->mu);
    shared_->abandon = true;
  }
  shared_->cv.notify_all();
  if (shared_->thread.joinable()) shared_->thread.join();
}

void Sha256Behind::Loop() {
  // Named like the host's threads (runtime/thread_name.h, a room above core): the literal fits
  // Linux's 15-byte limit. Best effort: a failure changes nothing else.
  (void)pthread_setname_np(pthread_self(), "cg-sha256");
  MutexLock lock(shared_->mu);
  while (true) {
    shared_->mu.Wait(shared_->cv, [&]() CLAWGUARD_REQUIRES(shared_->mu) {
      return shared_->abandon || shared_->stop || shared_->hashed < shared_->published.size();
    });
    if (shared_->abandon || shared_->hashed == shared_->published.size()) return;
    // At most kStep at a time, so that an abandoning destructor waits for one step only.
    constexpr size_t kStep = size_t{1} << 20;
    const std::string_view todo = shared_->published.substr(shared_->hashed, kStep);
    lock.Unlock();
    hash_.Update(todo);  // published bytes are final and stay put until Wait returns
    lock.Lock();
    shared_->hashed += todo.size();
    shared_->cv.notify_all();
  }
}

void Sha256Behind::Publish(std::string_view done) {
  if (shared_ == nullptr) {
    CLAWGUARD_CHECK(done.size() >= hashed_);
    hash_.Update(done.substr(hashed_));
    hashed_ = done.size();
    return;
  }
  {
    MutexLock lock(shared_->mu);
    CLAWGUARD_CHECK(done.size() >= shared_->published.size());
    shared_->published = done;
  }
  shared_->cv.notify_all();
}

void Sha256Behind::Wait() {
  if (shared_ == nullptr) return;
  MutexLock lock(shared_->mu);
  shared_->mu.Wait(shared_->cv, [&]() CLAWGUARD_REQUIRES(shared_->mu) {
    return shared_->hashed == shared_->published.size();
  });
}

Sha256Digest Sha256Behind::Finish() {
  if (shared_ != nullptr) {
    {
      MutexLock lock(shared_->mu);
      shared_->stop = true;
    }
    shared_->cv.notify_all();
    shared_->thread.join();  // the loop hashes what is left before it returns
    shared_.reset();
  }
  return hash_.Finish();
}

Sha256Digest Sha256Of(std::string_view bytes) {
  // One context per thread, re-initialised per call: no allocation per hash.
  thread_local const ossl::UniquePtr<EVP_MD_CTX> ctx(EVP_MD_CTX_new());
  CLAWGUARD_CHECK(ctx != nullptr);
  Sha256Digest d{};
  unsigned int len = 0;
  CLAWGUARD_CHECK(EVP_DigestInit_ex(ctx.get(), Sha256Md(), nullptr) == 1 &&
                  EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size()) == 1 &&
                  EVP_DigestFinal_ex(ctx.get(), d.data(), &len) == 1 && len == d.size());
  return d;
}

std::string DigestHex(const Sha256Digest& d) { return HexEncode(DigestView(d)); }
std::string Sha256Hex(std::string_view bytes) { return DigestHex(Sha256Of(bytes)); }

}  // namespace clawguard
