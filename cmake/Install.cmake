# install(EXPORT) so a ClawHub host can find_package(ClawGuard) and link ClawGuard::loader
# without pulling SQLite, libpq or Boost.Context. ClawGuard::runtime (fibers, on Boost.Context),
# ClawGuard::store_sqlite and ClawGuard::host are in-tree only: neither they nor their headers
# are installed.
# Two install components, one Debian package each (cmake/Packaging.cmake): runtime (the commands)
# and dev (headers, static libraries, the CMake package).
include(CMakePackageConfigHelpers)
set(CLAWGUARD_EXPORTED_TARGETS clawguard_core clawguard_store_api)
foreach(t clawguard_loader clawguard_store_postgresql)
  if(TARGET ${t})
    list(APPEND CLAWGUARD_EXPORTED_TARGETS ${t})
  endif()
endforeach()
# ClawGuard::store_postgresql's headers (its INSTALL_INTERFACE include dir is
# include/clawguard/store, so they are included as "postgresql/pg_*.h"). A consumer that links it
# needs libpq (PostgreSQL::PostgreSQL) found first; ClawGuard::loader alone never pulls it.
if(TARGET clawguard_store_postgresql)
  file(GLOB CLAWGUARD_PG_HEADERS ${PROJECT_SOURCE_DIR}/store/postgresql/*.h)
  install(FILES ${CLAWGUARD_PG_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/clawguard/store/postgresql
          COMPONENT dev)
endif()
install(TARGETS ${CLAWGUARD_EXPORTED_TARGETS} clawguard_warnings clawguard_sanitizers
        EXPORT ClawGuardTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(DIRECTORY include/clawguard DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(EXPORT ClawGuardTargets NAMESPACE ClawGuard:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ClawGuard
        COMPONENT dev)
configure_package_config_file(cmake/ClawGuardConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/ClawGuardConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ClawGuard)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ClawGuardConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ClawGuardConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/ClawGuardConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ClawGuard COMPONENT dev)
if(TARGET clawguard)
  install(TARGETS clawguard RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
endif()
if(TARGET clawguard-worker)
  # Not for users to run: the host starts it (plugins.isolation: sandbox) and looks for it here.
  install(TARGETS clawguard-worker RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/clawguard
          COMPONENT runtime)
endif()
