# Install rules of fedleaf-server and its Debian package (CPack DEB):
#   cmake --install build --prefix P   # P/bin/fedleaf-server, P/share/man/man1/fedleaf-server.1,
#                                      # P/lib/systemd/system/fedleaf-server.service (ExecStart
#                                      # names /usr/bin: the package's prefix)
#   (cd build && cpack -G DEB)         # build/fedleaf-server_<version>_<arch>.deb
# The package's maintainer scripts and unit are in deploy/debian/; scripts/test_deb.sh installs
# the .deb in a throwaway root and serves /healthz from the unit's ExecStart line.
include(GNUInstallDirs)

set(FEDLEAF_MAN_PAGE ${CMAKE_BINARY_DIR}/fedleaf-server.1)
add_custom_command(
  OUTPUT ${FEDLEAF_MAN_PAGE}
  COMMAND ${CMAKE_COMMAND} -DSERVER=$<TARGET_FILE:fedleaf-server> -DVERSION=${PROJECT_VERSION}
          -DOUT=${FEDLEAF_MAN_PAGE} -P ${PROJECT_SOURCE_DIR}/cmake/FedleafManPage.cmake
  DEPENDS fedleaf-server ${PROJECT_SOURCE_DIR}/cmake/FedleafManPage.cmake
  COMMENT "fedleaf-server.1 from fedleaf-server --help"
  VERBATIM)
add_custom_target(fedleaf-server-man ALL DEPENDS ${FEDLEAF_MAN_PAGE})

install(TARGETS fedleaf-server RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${FEDLEAF_MAN_PAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/debian/fedleaf-server.service
        DESTINATION lib/systemd/system)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/debian/default
        DESTINATION ${CMAKE_INSTALL_DATADIR}/fedleaf-server)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/prometheus/fedleaf.rules.yml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/fedleaf-server)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME fedleaf-server)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "fedleaf task repository: federated learning for the web")
set(CPACK_PACKAGE_CONTACT "fedleaf maintainers <maintainers@users.noreply.a-seed-0bc8e7d5.example>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The shared libraries it links, found by dpkg-shlibdeps (libsqlite3-0, libpq5, libspdlog1.10,
# libfmt9, libssl3, libstdc++6, libc6, …), and adduser for the maintainer scripts.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/postinst ${PROJECT_SOURCE_DIR}/deploy/debian/prerm
    ${PROJECT_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_OUTPUT_FILE_PREFIX ${CMAKE_BINARY_DIR})
include(CPack)
