# One warnings target for every ClawGuard target.
add_library(clawguard_warnings INTERFACE)
target_compile_options(clawguard_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Wunused
  -Woverloaded-virtual -Wformat=2 -Wimplicit-fallthrough)
if(CLAWGUARD_WERROR)
  target_compile_options(clawguard_warnings INTERFACE -Werror)
endif()

# clawguard_target_defaults(TARGET) — warnings + sanitizers (when on) for a non-plugin target.
function(clawguard_target_defaults target)
  target_link_libraries(${target} PRIVATE $<BUILD_INTERFACE:clawguard_warnings> $<BUILD_INTERFACE:clawguard_sanitizers>)
endfunction()
