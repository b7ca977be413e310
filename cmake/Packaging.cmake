# Debian packages with CPack (DEB generator), one per install component (cmake/Install.cmake):
# - clawguard (component runtime): /usr/bin/clawguard, /usr/libexec/clawguard/clawguard-worker,
#   the manual pages, /etc/clawguard/{host,trust,allowlist}.yaml (commented examples, conffiles),
#   the systemd unit, /etc/logrotate.d/clawguard and the maintainer scripts (packaging/debian/:
#   the clawguard user, /var/lib/clawguard and /var/log/clawguard; never starts the service).
# - libclawguard-dev (component dev): the headers, the static libraries and the CMake package
#   (find_package(ClawGuard), ClawGuard::loader).
# `cpack --config BUILD/CPackConfig.cmake` writes clawguard_VERSION-1_ARCH.deb and
# libclawguard-dev_VERSION-1_ARCH.deb; ci/package does it on the release preset.
#
# The host looks for clawguard-worker in LIBEXECDIR/clawguard of the prefix it was configured
# with (CLAWGUARD_WORKER_INSTALL_PATH), and the packages install under /usr: a build meant for
# packaging is configured with -DCMAKE_INSTALL_PREFIX=/usr (ci/package does). From a tree with
# another prefix the packaged host finds its worker only through plugins.worker.
#
# The files under /etc, /lib and share/doc are installed EXCLUDE_FROM_ALL: only a component
# install (CPack's) puts them in place, never `cmake --install BUILD --prefix DIR`, which would
# otherwise write into the machine's /etc whatever the prefix.

set(CLAWGUARD_PACKAGE_MAINTAINER "ClawGuard maintainers <maintainers@clawguard.example>"
    CACHE STRING "Maintainer: field of the Debian packages")
set(CLAWGUARD_PACKAGE_HOMEPAGE "https://clawguard.example/"
    CACHE STRING "Homepage: field of the Debian packages")
if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  message(STATUS "Packaging: CMAKE_INSTALL_PREFIX is ${CMAKE_INSTALL_PREFIX}; the Debian packages "
                 "install under /usr, where this build's host does not look for clawguard-worker "
                 "(configure with -DCMAKE_INSTALL_PREFIX=/usr to package)")
endif()

set(_pkg_src ${PROJECT_SOURCE_DIR}/packaging)
set(_pkg_bin ${PROJECT_BINARY_DIR}/packaging)

# Manual pages from the commands' --help (help2man, packaging/man/generate-man.sh), at build time.
# Not in sanitized builds: their clawguard is no packaged binary, and running it at build time
# would make the build depend on the sanitizer runtime's verdict at exit.
find_program(CLAWGUARD_HELP2MAN help2man)
if(TARGET clawguard AND CLAWGUARD_HELP2MAN AND NOT CLAWGUARD_SANITIZE)
  add_custom_command(
    OUTPUT ${_pkg_bin}/man/clawguard.1.gz
    COMMAND ${_pkg_src}/man/generate-man.sh $<TARGET_FILE:clawguard> ${_pkg_bin}/man
    DEPENDS clawguard ${_pkg_src}/man/generate-man.sh
    COMMENT "Generating the manual pages from clawguard --help (help2man)"
    VERBATIM)
  add_custom_target(clawguard_man ALL DEPENDS ${_pkg_bin}/man/clawguard.1.gz)
  # OPTIONAL: an install from a tree where only some targets were built goes on without them.
  install(DIRECTORY ${_pkg_bin}/man/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT runtime
          OPTIONAL FILES_MATCHING PATTERN "*.1.gz")
elseif(TARGET clawguard AND NOT CLAWGUARD_SANITIZE)
  message(STATUS "Packaging: help2man not found, the clawguard package will have no manual pages "
                 "(ci/setup-deps installs help2man)")
endif()

# changelog.Debian.gz, which Debian policy asks of every binary package (gzip -9n: reproducible).
# Its date is the configure time, or SOURCE_DATE_EPOCH when set.
set(CLAWGUARD_DEB_VERSION "${PROJECT_VERSION}-1")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CLAWGUARD_PACKAGE_MAINTAINER}")
string(TIMESTAMP CLAWGUARD_DEB_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
configure_file(${_pkg_src}/debian/changelog.in ${_pkg_bin}/changelog.Debian @ONLY)
add_custom_command(
  OUTPUT ${_pkg_bin}/changelog.Debian.gz
  COMMAND gzip -9n -c ${_pkg_bin}/changelog.Debian > ${_pkg_bin}/changelog.Debian.gz
  DEPENDS ${_pkg_bin}/changelog.Debian
  COMMENT "Compressing the Debian changelog")
add_custom_target(clawguard_deb_changelog ALL DEPENDS ${_pkg_bin}/changelog.Debian.gz)

foreach(_pkg_component_doc runtime:clawguard dev:libclawguard-dev)
  string(REPLACE ":" ";" _pkg_pair ${_pkg_component_doc})
  list(GET _pkg_pair 0 _pkg_component)
  list(GET _pkg_pair 1 _pkg_name)
  install(FILES ${_pkg_src}/debian/copyright ${_pkg_bin}/changelog.Debian.gz
          DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${_pkg_name}
          PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
          COMPONENT ${_pkg_component} EXCLUDE_FROM_ALL)
endforeach()

# The system files of the clawguard package: absolute destinations, component installs only.
install(FILES ${_pkg_src}/debian/etc/host.yaml ${_pkg_src}/debian/etc/trust.yaml
              ${_pkg_src}/debian/etc/allowlist.yaml
        DESTINATION /etc/clawguard
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
        COMPONENT runtime EXCLUDE_FROM_ALL)
install(FILES ${_pkg_src}/debian/logrotate DESTINATION /etc/logrotate.d RENAME clawguard
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
        COMPONENT runtime EXCLUDE_FROM_ALL)
install(FILES ${_pkg_src}/systemd/clawguard-host.service DESTINATION /lib/systemd/system
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
        COMPONENT runtime EXCLUDE_FROM_ALL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME clawguard)
set(CPACK_PACKAGE_VENDOR "ClawGuard")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${CLAWGUARD_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${CLAWGUARD_PACKAGE_HOMEPAGE}")
# Maintainer scripts 0755 and conffiles 0644 in the control archive, whatever the checkout's modes.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME clawguard)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION admin)
# The shared libraries' packages come from dpkg-shlibdeps; adduser for the maintainer scripts.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS "logrotate, postgresql-client")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA
    ${_pkg_src}/debian/postinst ${_pkg_src}/debian/prerm ${_pkg_src}/debian/postrm
    ${_pkg_src}/debian/conffiles)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
"verify, sign and host signed ClawHub plugins
ClawGuard checks plugin packages against a pinned trust policy and a signed
allowlist before any code is loaded, and runs a webhook host that delivers
each event to its plugin at most once (idempotency keys, a signed ledger).
Each plugin runs in a locked-down worker process (namespaces, Landlock,
seccomp).

This package holds the clawguard command, its plugin worker, a hardened
systemd unit (clawguard-host.service, not started on install), commented
example configuration in /etc/clawguard and a logrotate rule for the audit
log.")

# A consumer of ClawGuard::loader needs the packages of ClawGuardConfig.cmake's find_dependency
# list: Threads (libc), OpenSSL 3, PkgConfig with libsodium, LibArchive, yaml-cpp, nlohmann_json 3.
# libpq only for the store_postgresql component.
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libclawguard-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libssl-dev (>= 3.0), pkg-config | pkgconf, libsodium-dev, libarchive-dev, libyaml-cpp-dev, \
nlohmann-json3-dev (>= 3)")
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS "libpq-dev, cmake (>= 3.25)")
set(CPACK_DEBIAN_DEV_DESCRIPTION
"ClawGuard plugin loader - development files
ClawGuard checks plugin packages against a pinned trust policy and a signed
allowlist before any code is loaded.

This package holds the headers, the static libraries and the CMake package
for embedding the loader: find_package(ClawGuard) and link ClawGuard::loader.")

include(CPack)
