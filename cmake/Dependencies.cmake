# Every external dependency, found from Debian 12 packages (ci/setup-deps). No downloads.
find_package(Threads REQUIRED)
find_package(OpenSSL 3.0 REQUIRED COMPONENTS Crypto SSL)
find_package(PkgConfig REQUIRED)
pkg_check_modules(SODIUM REQUIRED IMPORTED_TARGET libsodium)
pkg_check_modules(P11KIT REQUIRED IMPORTED_TARGET p11-kit-1)
# libseccomp (2.5.4 on Debian 12): the seccomp filters of plugin workers (host/sandbox).
pkg_check_modules(SECCOMP REQUIRED IMPORTED_TARGET libseccomp)
# sd_notify for `clawguard host` under systemd (Type=notify: READY, STATUS, WATCHDOG, STOPPING).
pkg_check_modules(SYSTEMD REQUIRED IMPORTED_TARGET libsystemd)
find_package(LibArchive REQUIRED)
find_package(yaml-cpp REQUIRED)            # target: yaml-cpp (0.7 on Debian 12)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS context)
find_package(SQLite3 REQUIRED)
# libpq for ClawGuard::store_postgresql (target PostgreSQL::PostgreSQL; its "server headers not
# found" note is harmless: only the client library is used). Optional: without it the engine,
# tests/pg and tests/multihost are left out and postgresql:// URLs answer store_unavailable.
find_package(PostgreSQL QUIET)
if(NOT PostgreSQL_FOUND)
  message(STATUS "libpq not found: building without the PostgreSQL store engine (apt-get install libpq-dev)")
endif()
if(CLAWGUARD_BUILD_TESTS)
  find_package(GTest REQUIRED)
  # elfutils libelf: a second, independent ELF reader for the ELF check's differential tests
  # (test-only; the product never links it).
  pkg_check_modules(LIBELF REQUIRED IMPORTED_TARGET libelf)
endif()
if(CLAWGUARD_BUILD_BENCH)
  find_package(benchmark QUIET)
endif()
