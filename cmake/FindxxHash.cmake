# FindxxHash: the xxHash library (https://github.com/Cyan4973/xxHash), which installs no CMake
# package of its own on Debian. Provides the imported target xxHash::xxhash and
#   xxHash_FOUND, xxHash_VERSION, xxHash_INCLUDE_DIR, xxHash_LIBRARY
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_xxHash QUIET libxxhash)
endif()
find_path(xxHash_INCLUDE_DIR NAMES xxhash.h HINTS ${PC_xxHash_INCLUDE_DIRS})
find_library(xxHash_LIBRARY NAMES xxhash HINTS ${PC_xxHash_LIBRARY_DIRS})

if(xxHash_INCLUDE_DIR AND EXISTS "${xxHash_INCLUDE_DIR}/xxhash.h")
  file(STRINGS "${xxHash_INCLUDE_DIR}/xxhash.h" version_lines
       REGEX "^#define XXH_VERSION_(MAJOR|MINOR|RELEASE)[ \t]+[0-9]+")
  foreach(part MAJOR MINOR RELEASE)
    string(REGEX REPLACE ".*XXH_VERSION_${part}[ \t]+([0-9]+).*" "\\1" xxHash_${part}
           "${version_lines}")
  endforeach()
  set(xxHash_VERSION "${xxHash_MAJOR}.${xxHash_MINOR}.${xxHash_RELEASE}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(xxHash
  REQUIRED_VARS xxHash_LIBRARY xxHash_INCLUDE_DIR
  VERSION_VAR xxHash_VERSION)

if(xxHash_FOUND AND NOT TARGET xxHash::xxhash)
  add_library(xxHash::xxhash UNKNOWN IMPORTED)
  set_target_properties(xxHash::xxhash PROPERTIES
    IMPORTED_LOCATION "${xxHash_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${xxHash_INCLUDE_DIR}")
endif()
mark_as_advanced(xxHash_INCLUDE_DIR xxHash_LIBRARY)
