# r3_add_library(<target> EXPORT_NAME <name> [INCLUDE_DIR <dir>] SOURCES ...)
# One r3 library: shared or static per BUILD_SHARED_LIBS (or SHARED when given), versioned,
# exported as r3::<name>, its public headers under <dir> (default: include/) installed.
function(r3_add_library target)
  cmake_parse_arguments(ARG "SHARED" "EXPORT_NAME;INCLUDE_DIR" "SOURCES" ${ARGN})
  if(ARG_SHARED)
    add_library(${target} SHARED ${ARG_SOURCES})
  else()
    add_library(${target} ${ARG_SOURCES})
  endif()
  add_library(r3::${ARG_EXPORT_NAME} ALIAS ${target})
  if(NOT ARG_INCLUDE_DIR)
    set(ARG_INCLUDE_DIR "${CMAKE_CURRENT_SOURCE_DIR}/include")
  endif()
  set_target_properties(${target} PROPERTIES
    EXPORT_NAME ${ARG_EXPORT_NAME}
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${ARG_INCLUDE_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  install(TARGETS ${target} EXPORT r3Targets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)
  install(DIRECTORY "${ARG_INCLUDE_DIR}/r3" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    COMPONENT development)
endfunction()
