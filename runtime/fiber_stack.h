// fiber_stack.h — fibers' stacks: guarded stacks whose bounds are noted for AddressSanitizer, and
// the notices ASan needs at every stack switch (no-ops in builds without ASan).
#ifndef CLAWGUARD_RUNTIME_FIBER_STACK_H_
#define CLAWGUARD_RUNTIME_FIBER_STACK_H_

#include <boost/context/protected_fixedsize_stack.hpp>
#include <boost/context/stack_context.hpp>
#include <cstddef>

namespace clawguard::fiber {

struct Fiber;

// AddressSanitizer must be told of every stack switch (its fake stacks for use-after-return
// detection, and the stack bounds it unpoisons when an exception unwinds); Boost.Context 1.74
// does not tell it for fcontext fibers.
// IntoFiber/BackFromFiber: the carrier's side of a resume; OutOfFiber/IntoFiberDone: the fiber's.
void IntoFiber(void** carrier_fake, const Fiber* f);
void BackFromFiber(void* carrier_fake);
// OutOfFiber: the fiber switches back to its caller; |dying|: it will not run again.
void OutOfFiber(Fiber* f, bool dying);
// IntoFiberDone: the fiber runs again (or for the first time); notes its caller's stack.
void IntoFiberDone(Fiber* f);

// RecordingStack allocates guarded stacks and notes each one's bounds in its fiber (for ASan).
class RecordingStack {
 public:
  RecordingStack(size_t size, Fiber* f) : inner_(size), fiber_(f) {}
  boost::context::stack_context allocate();
  void deallocate(boost::context::stack_context& sctx) noexcept { inner_.deallocate(sctx); }

 private:
  boost::context::protected_fixedsize_stack inner_;
  Fiber* fiber_;
};

}  // namespace clawguard::fiber

#endif  // CLAWGUARD_RUNTIME_FIBER_STACK_H_
