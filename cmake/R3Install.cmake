# Install rules and the exported CMake package: after `cmake --install`, a project finds r3 with
#   find_package(r3 REQUIRED)  and links  r3::core
include(CMakePackageConfigHelpers)

set(R3_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/r3")

install(EXPORT r3Targets
  NAMESPACE r3::
  DESTINATION "${R3_INSTALL_CMAKEDIR}"
  COMPONENT development)

configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/r3Config.cmake.in"
  "${PROJECT_BINARY_DIR}/r3Config.cmake"
  INSTALL_DESTINATION "${R3_INSTALL_CMAKEDIR}")
write_basic_package_version_file("${PROJECT_BINARY_DIR}/r3ConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)

install(FILES
  "${PROJECT_BINARY_DIR}/r3Config.cmake"
  "${PROJECT_BINARY_DIR}/r3ConfigVersion.cmake"
  "${PROJECT_SOURCE_DIR}/cmake/FindxxHash.cmake"
  DESTINATION "${R3_INSTALL_CMAKEDIR}"
  COMPONENT development)

install(FILES "${R3_GENERATED_INCLUDE_DIR}/r3/config.hpp"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/r3"
  COMPONENT development)

install(DIRECTORY "${PROJECT_SOURCE_DIR}/docs/" DESTINATION "${CMAKE_INSTALL_DOCDIR}"
  COMPONENT documentation)

# The batch scripts (jobs/README.md), to copy next to a tune.yaml on a cluster.
install(DIRECTORY "${PROJECT_SOURCE_DIR}/jobs/" DESTINATION "${CMAKE_INSTALL_DATADIR}/r3/jobs"
  COMPONENT runtime USE_SOURCE_PERMISSIONS)
