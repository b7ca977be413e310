# install(EXPORT) so a ClawHub host can find_package(ClawGuard) and link ClawGuard::loader
# without pulling SQLite or libpq.
include(CMakePackageConfigHelpers)
set(CLAWGUARD_EXPORTED_TARGETS clawguard_core clawguard_store_api)
foreach(t clawguard_loader)
  if(TARGET ${t})
    list(APPEND CLAWGUARD_EXPORTED_TARGETS ${t})
  endif()
endforeach()
install(TARGETS ${CLAWGUARD_EXPORTED_TARGETS} clawguard_warnings clawguard_sanitizers
        EXPORT ClawGuardTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/clawguard DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT ClawGuardTargets NAMESPACE ClawGuard:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ClawGuard)
configure_package_config_file(cmake/ClawGuardConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/ClawGuardConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ClawGuard)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ClawGuardConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ClawGuardConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/ClawGuardConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ClawGuard)
if(TARGET clawguard)
  install(TARGETS clawguard RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
