# One warnings target for every ClawGuard target.
add_library(clawguard_warnings INTERFACE)
target_compile_options(clawguard_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Wunused
  -Woverloaded-virtual -Wformat=2 -Wimplicit-fallthrough)
# Clang checks the locking annotations of core/thread_annotations.h (the `clang` preset); GCC
# ignores them.
target_compile_options(clawguard_warnings INTERFACE
  $<$<COMPILE_LANG_AND_ID:CXX,Clang>:-Wthread-safety>)
if(CLAWGUARD_WERROR)
  target_compile_options(clawguard_warnings INTERFACE -Werror)
endif()

# clawguard_target_defaults(TARGET) — warnings + sanitizers (when on) for a non-plugin target.
# With CLAWGUARD_FUZZ (the `fuzz` preset, clang) every non-plugin target is also compiled with
# libFuzzer's coverage instrumentation and ASan+UBSan, so that the fuzzers see and check the
# library code they drive, not only their own translation unit. The options are PRIVATE: they are
# never exported to an installed consumer.
function(clawguard_target_defaults target)
  target_link_libraries(${target} PRIVATE $<BUILD_INTERFACE:clawguard_warnings> $<BUILD_INTERFACE:clawguard_sanitizers>)
  if(CLAWGUARD_FUZZ)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()
