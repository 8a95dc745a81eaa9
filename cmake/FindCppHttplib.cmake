# FindCppHttplib: cpp-httplib (https://github.com/yhirose/cpp-httplib), used only by r3's tests
# (a real HTTP server on 127.0.0.1 standing in for an LLM endpoint). Debian ships it compiled
# (libcpp-httplib.so, whose feature macros the header must see as the library was built with:
# they come from its pkg-config file); Spack and others ship the header alone. Provides the
# imported target CppHttplib::httplib and
#   CppHttplib_FOUND, CppHttplib_VERSION, CppHttplib_INCLUDE_DIR, CppHttplib_LIBRARY (if any)
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_CppHttplib QUIET cpp-httplib)
endif()
find_path(CppHttplib_INCLUDE_DIR NAMES httplib.h HINTS ${PC_CppHttplib_INCLUDE_DIRS})
find_library(CppHttplib_LIBRARY NAMES cpp-httplib HINTS ${PC_CppHttplib_LIBRARY_DIRS})

if(CppHttplib_INCLUDE_DIR AND EXISTS "${CppHttplib_INCLUDE_DIR}/httplib.h")
  file(STRINGS "${CppHttplib_INCLUDE_DIR}/httplib.h" version_line
       REGEX "^#define CPPHTTPLIB_VERSION \"[0-9.]+\"")
  string(REGEX REPLACE ".*\"([0-9.]+)\".*" "\\1" CppHttplib_VERSION "${version_line}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CppHttplib
  REQUIRED_VARS CppHttplib_INCLUDE_DIR
  VERSION_VAR CppHttplib_VERSION)

if(CppHttplib_FOUND AND NOT TARGET CppHttplib::httplib)
  find_package(Threads REQUIRED)
  add_library(CppHttplib::httplib INTERFACE IMPORTED)
  set_target_properties(CppHttplib::httplib PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${CppHttplib_INCLUDE_DIR}")
  target_link_libraries(CppHttplib::httplib INTERFACE Threads::Threads)
  if(CppHttplib_LIBRARY)
    target_link_libraries(CppHttplib::httplib INTERFACE "${CppHttplib_LIBRARY}")
    # -DCPPHTTPLIB_OPENSSL_SUPPORT ... as the compiled library was built.
    foreach(flag IN LISTS PC_CppHttplib_CFLAGS_OTHER)
      if(flag MATCHES "^-D(.+)")
        target_compile_definitions(CppHttplib::httplib INTERFACE "${CMAKE_MATCH_1}")
      endif()
    endforeach()
  endif()
endif()
mark_as_advanced(CppHttplib_INCLUDE_DIR CppHttplib_LIBRARY)
