// fiber_stack.cpp — see fiber_stack.h.
#include "runtime/fiber_stack.h"

#include "runtime/fiber_carrier.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

namespace clawguard::fiber {

void IntoFiber(void** carrier_fake, const Fiber* f) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(carrier_fake, f->stack_bottom, f->stack_size);
#else
  (void)carrier_fake;
  (void)f;
#endif
}
void BackFromFiber(void* carrier_fake) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(carrier_fake, nullptr, nullptr);
#else
  (void)carrier_fake;
#endif
}
void OutOfFiber(Fiber* f, bool dying) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(dying ? nullptr : &f->fake_stack, f->caller_bottom,
                                 f->caller_size);
#else
  (void)f;
  (void)dying;
#endif
}
void IntoFiberDone(Fiber* f) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(f->fake_stack, &f->caller_bottom, &f->caller_size);
#else
  (void)f;
#endif
}

boost::context::stack_context RecordingStack::allocate() {
  boost::context::stack_context sctx = inner_.allocate();
  fiber_->stack_size = sctx.size;
  fiber_->stack_bottom = static_cast<const char*>(sctx.sp) - sctx.size;
  return sctx;
}

}  // namespace clawguard::fiber
