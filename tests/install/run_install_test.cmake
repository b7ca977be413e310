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
# Same compiler as the producer; its sanitizer flags too when it was sanitized (CONSUMER_FLAGS).
run(${CMAKE_COMMAND_PATH} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_CXX_COMPILER=${CONSUMER_CXX} -DCMAKE_C_COMPILER=${CONSUMER_C}
    "-DCMAKE_CXX_FLAGS=${CONSUMER_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${CONSUMER_FLAGS}")
run(${CMAKE_COMMAND_PATH} --build ${WORK_DIR}/build)

set(exe ${WORK_DIR}/build/consumer)
execute_process(COMMAND ${exe} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "config_invalid")
  message(FATAL_ERROR "consumer should print config_invalid and exit 0; got ${rc}: ${out}${err}")
endif()

run(readelf -d ${exe})
if(last_out MATCHES "sqlite|libpq")
  message(FATAL_ERROR "the consumer links SQLite or libpq:\n${last_out}")
endif()
run(ldd ${exe})
if(last_out MATCHES "sqlite|libpq")
  message(FATAL_ERROR "the consumer pulls SQLite or libpq:\n${last_out}")
endif()
run(nm -C ${exe})
if(last_out MATCHES "sqlite3_|PQconnect")
  message(FATAL_ERROR "the consumer contains SQLite or libpq symbols")
endif()
message(STATUS "consumer built against the installed ClawGuard::loader without SQLite/libpq")
