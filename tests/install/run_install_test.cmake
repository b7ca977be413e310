# run_install_test.cmake — driven by the install_consumer test (see CMakeLists.txt).
# Inputs: BUILD_DIR, CONSUMER_DIR, WORK_DIR, CMAKE_COMMAND_PATH, CONSUMER_CXX, CONSUMER_C and
# CONSUMER_FLAGS (the producer's sanitizer flags, empty when it was not sanitized).
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_out "${out}" PARENT_SCOPE)
endfunction()

run(${CMAKE_COMMAND_PATH} --install ${BUILD_DIR} --prefix ${prefix})

# What is installed names neither Boost nor SQLite: no header includes them or the in-tree
# runtime (runtime/fiber.h and the rest are not installed), and no exported target or package
# file asks for them (libpq is asked for only with the store_postgresql component, see
# ClawGuardConfig.cmake).
file(GLOB_RECURSE installed_headers ${prefix}/include/*.h)
foreach(h IN LISTS installed_headers)
  file(READ ${h} text)
  if(text MATCHES "#include [<\"](boost/|runtime/|sqlite3?\\.h)" OR h MATCHES "/(fiber|thread_name|spare_threads)\\.h$")
    message(FATAL_ERROR "an installed header belongs to the runtime or includes Boost/SQLite: ${h}")
  endif()
endforeach()
file(GLOB installed_cmake ${prefix}/lib*/cmake/ClawGuard/*.cmake)
foreach(f IN LISTS installed_cmake)
  file(READ ${f} text)
  if(text MATCHES "Boost::|boost_|find_dependency\\(Boost|SQLite::|sqlite3")
    message(FATAL_ERROR "the installed package refers to Boost or SQLite: ${f}")
  endif()
endforeach()

# Same compiler as the producer; its sanitizer flags too when it was sanitized (CONSUMER_FLAGS).
# Boost, SQLite and libpq are hidden from the consumer's find_package: find_package(ClawGuard)
# and the loader's link interface must do without them (a Boost::context left in an exported
# link interface fails the configure: the imported target does not exist).
run(${CMAKE_COMMAND_PATH} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_DISABLE_FIND_PACKAGE_Boost=TRUE -DCMAKE_DISABLE_FIND_PACKAGE_SQLite3=TRUE
    -DCMAKE_DISABLE_FIND_PACKAGE_PostgreSQL=TRUE
    -DCMAKE_CXX_COMPILER=${CONSUMER_CXX} -DCMAKE_C_COMPILER=${CONSUMER_C}
    "-DCMAKE_CXX_FLAGS=${CONSUMER_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${CONSUMER_FLAGS}")
run(${CMAKE_COMMAND_PATH} --build ${WORK_DIR}/build)

set(exe ${WORK_DIR}/build/consumer)
execute_process(COMMAND ${exe} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "config_invalid")
  message(FATAL_ERROR "consumer should print config_invalid and exit 0; got ${rc}: ${out}${err}")
endif()

run(readelf -d ${exe})
if(last_out MATCHES "sqlite|libpq|boost_context")
  message(FATAL_ERROR "the consumer links SQLite, libpq or Boost.Context:\n${last_out}")
endif()
run(ldd ${exe})
if(last_out MATCHES "sqlite|libpq|boost_context")
  message(FATAL_ERROR "the consumer pulls SQLite, libpq or Boost.Context:\n${last_out}")
endif()
# Boost.Context's switch functions (jump_fcontext, …) and the fiber runtime's symbols.
run(nm -C ${exe})
if(last_out MATCHES "sqlite3_|PQconnect|_fcontext|boost::context|clawguard::fiber::")
  message(FATAL_ERROR "the consumer contains SQLite, libpq or Boost.Context symbols")
endif()
message(STATUS "consumer built against the installed ClawGuard::loader without SQLite/libpq/Boost.Context")
