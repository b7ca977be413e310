// thread_name.h — NameThisThread: gives the calling thread a short name that `top -H`, `ps -L`,
// gdb and `perf report --sort comm` show, so an operator (or a profile) can tell the host's I/O,
// handler, plugin and checkpoint threads apart. Linux keeps at most 15 bytes; longer names are
// cut. Best effort: a failure changes nothing else.
#ifndef CLAWGUARD_RUNTIME_THREAD_NAME_H_
#define CLAWGUARD_RUNTIME_THREAD_NAME_H_

#include <pthread.h>

#include <cstring>
#include <string_view>

namespace clawguard {

inline void NameThisThread(std::string_view name) {
  char buf[16] = {};
  std::memcpy(buf, name.data(), name.size() < sizeof(buf) - 1 ? name.size() : sizeof(buf) - 1);
  (void)pthread_setname_np(pthread_self(), buf);
}

}  // namespace clawguard

#endif  // CLAWGUARD_RUNTIME_THREAD_NAME_H_
