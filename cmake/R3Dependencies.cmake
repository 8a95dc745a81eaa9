# Every dependency comes from find_package: Debian/Ubuntu packages on a workstation, Spack on a
# cluster. Nothing is downloaded. Each result is recorded for the configure summary (R3Summary).

include(R3Summary)

# r3_require(<package> <debian package> <spack package>): stop with a message that says how to get it.
macro(r3_require package debian spack)
  if(NOT ${package}_FOUND)
    message(FATAL_ERROR
      "r3 needs ${package}, which was not found.\n"
      "  Debian/Ubuntu: apt-get install ${debian}\n"
      "  Spack:         spack install ${spack}   (then spack load ${spack})\n"
      "  or point ${package}_DIR / CMAKE_PREFIX_PATH at an installation.")
  endif()
endmacro()

# --- always required -----------------------------------------------------------------------------
find_package(Threads REQUIRED)

find_package(HDF5 1.10.2 COMPONENTS C QUIET)
r3_require(HDF5 libhdf5-dev hdf5)
if(NOT TARGET hdf5::hdf5)
  add_library(hdf5::hdf5 INTERFACE IMPORTED)
  target_include_directories(hdf5::hdf5 INTERFACE ${HDF5_C_INCLUDE_DIRS})
  target_link_libraries(hdf5::hdf5 INTERFACE ${HDF5_C_LIBRARIES})
  target_compile_definitions(hdf5::hdf5 INTERFACE ${HDF5_C_DEFINITIONS})
endif()
r3_summary_found(HDF5 "${HDF5_VERSION}" "${HDF5_C_INCLUDE_DIRS}")

find_package(yaml-cpp CONFIG QUIET)
r3_require(yaml-cpp libyaml-cpp-dev yaml-cpp)
# yaml-cpp 0.7 exports a plain `yaml-cpp` target, 0.8 a namespaced one.
if(TARGET yaml-cpp::yaml-cpp)
  set(R3_YAML_CPP_TARGET yaml-cpp::yaml-cpp)
else()
  set(R3_YAML_CPP_TARGET yaml-cpp)
endif()
r3_summary_found(yaml-cpp "${yaml-cpp_VERSION}" "${yaml-cpp_DIR}")

find_package(xxHash 0.8 QUIET)
r3_require(xxHash libxxhash-dev xxhash)
r3_summary_found(xxHash "${xxHash_VERSION}" "${xxHash_INCLUDE_DIR}")

find_package(CLI11 2.1 CONFIG QUIET)
r3_require(CLI11 libcli11-dev cli11)
r3_summary_found(CLI11 "${CLI11_VERSION}" "${CLI11_DIR}")

find_package(nlohmann_json 3.10 CONFIG QUIET)
r3_require(nlohmann_json nlohmann-json3-dev nlohmann-json)
r3_summary_found(nlohmann_json "${nlohmann_json_VERSION}" "${nlohmann_json_DIR}")

find_package(Eigen3 3.3 CONFIG QUIET)
r3_require(Eigen3 libeigen3-dev eigen)
r3_summary_found(Eigen3 "${Eigen3_VERSION}" "${EIGEN3_INCLUDE_DIR}")

find_package(NLopt 2.6 CONFIG QUIET)
r3_require(NLopt libnlopt-dev nlopt)
r3_summary_found(NLopt "${NLopt_VERSION}" "${NLopt_DIR}")

# The LLM client (evolve/) speaks HTTPS through libcurl's multi interface.
find_package(CURL 7.68 QUIET)
r3_require(CURL libcurl4-openssl-dev curl)
r3_summary_found(CURL "${CURL_VERSION_STRING}" "${CURL_INCLUDE_DIRS}")

# --- MPI (ON by default) ------------------------------------------------------------------------
set(R3_HAVE_MPI 0)
if(R3_ENABLE_MPI)
  set(MPI_DETERMINE_LIBRARY_VERSION ON)
  find_package(MPI COMPONENTS C QUIET)
  if(NOT MPI_C_FOUND)
    message(FATAL_ERROR
      "R3_ENABLE_MPI is ON but no MPI was found.\n"
      "  Debian/Ubuntu: apt-get install libopenmpi-dev openmpi-bin    Spack: spack install mpi\n"
      "  or configure with -DR3_ENABLE_MPI=OFF (r3-mpi then runs as a single process).")
  endif()
  set(R3_HAVE_MPI 1)
  # r3 uses the MPI C API from C++; keep the deprecated C++ bindings out of mpi.h.
  add_library(r3_mpi_c INTERFACE)
  target_link_libraries(r3_mpi_c INTERFACE MPI::MPI_C)
  target_compile_definitions(r3_mpi_c INTERFACE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
  add_library(r3::mpi ALIAS r3_mpi_c)
  set(mpi_flavour "MPI ${MPI_C_VERSION}")
  if(MPI_C_LIBRARY_VERSION_STRING MATCHES "^([^,\n]+)")
    set(mpi_flavour "${CMAKE_MATCH_1}, MPI ${MPI_C_VERSION}")
  endif()
  r3_summary_found(MPI "${mpi_flavour}" "${MPI_C_HEADER_DIR}")
else()
  r3_summary_off(MPI "R3_ENABLE_MPI=OFF")
endif()

# --- libseccomp (AUTO): confines host-backend candidates in the evaluation sandbox -------------
set(R3_HAVE_SECCOMP 0)
if(NOT R3_ENABLE_SECCOMP STREQUAL "OFF")
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(SECCOMP QUIET IMPORTED_TARGET libseccomp>=2.4)
  endif()
  if(SECCOMP_FOUND)
    set(R3_HAVE_SECCOMP 1)
    r3_summary_found(libseccomp "${SECCOMP_VERSION}" "${SECCOMP_LIBDIR}")
  elseif(R3_ENABLE_SECCOMP STREQUAL "ON")
    message(FATAL_ERROR "R3_ENABLE_SECCOMP=ON but libseccomp >= 2.4 was not found (pkg-config "
      "libseccomp). Debian/Ubuntu: apt-get install libseccomp-dev; Spack: libseccomp.")
  else()
    r3_summary_missing(libseccomp "not found; candidates run unconfined (crashes and hangs are still isolated)")
  endif()
else()
  r3_summary_off(libseccomp "R3_ENABLE_SECCOMP=OFF")
endif()

# --- CUDA (AUTO) --------------------------------------------------------------------------------
set(R3_HAVE_CUDA 0)
set(R3_HAVE_ZSTD 0)
if(NOT R3_ENABLE_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit 12.4 QUIET)
  set(cuda_missing "")
  foreach(component cuda_driver nvrtc cupti)
    if(NOT TARGET CUDA::${component})
      list(APPEND cuda_missing ${component})
    endif()
  endforeach()
  if(CUDAToolkit_FOUND AND NOT cuda_missing)
    set(R3_HAVE_CUDA 1)
    get_filename_component(R3_CUDA_ROOT "${CUDAToolkit_BIN_DIR}" DIRECTORY)
    r3_summary_found(CUDA "${CUDAToolkit_VERSION_MAJOR}.${CUDAToolkit_VERSION_MINOR}" "${R3_CUDA_ROOT}")
    # nvcc (CUDA 13) compresses the PTX in fat binaries with zstd: the CUDA recorder needs it to
    # keep a kernel's PTX (for replays on another GPU architecture).
    find_package(zstd CONFIG QUIET)
    if(TARGET zstd::libzstd_shared)
      set(R3_ZSTD_TARGET zstd::libzstd_shared)
    elseif(TARGET zstd::libzstd_static)
      set(R3_ZSTD_TARGET zstd::libzstd_static)
    endif()
    if(R3_ZSTD_TARGET)
      set(R3_HAVE_ZSTD 1)
      r3_summary_found(zstd "${zstd_VERSION}" "${zstd_DIR}")
    else()
      r3_summary_missing(zstd "not found; the CUDA recorder keeps only uncompressed PTX (apt-get install libzstd-dev)")
    endif()
  elseif(R3_ENABLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "R3_ENABLE_CUDA=ON but the CUDA Toolkit >= 12.4 with driver API, NVRTC and "
      "CUPTI was not found (missing: ${cuda_missing}). Set CUDAToolkit_ROOT or put nvcc on PATH.")
  elseif(CUDAToolkit_FOUND)
    r3_summary_missing(CUDA "toolkit ${CUDAToolkit_VERSION} lacks: ${cuda_missing}")
  else()
    r3_summary_missing(CUDA "CUDA Toolkit >= 12.4 not found")
  endif()
else()
  r3_summary_off(CUDA "R3_ENABLE_CUDA=OFF")
endif()

# --- LLVM + Clang 19 (AUTO) ----------------------------------------------------------------------
# 19 reads the CUDA 12/13 headers of application code that Clang 16 cannot; 16 is still accepted
# where 19 is missing (Debian 12 and Ubuntu 24.04 ship both). R3_LLVM_VERSION picks one.
set(R3_HAVE_LLVM 0)
set(R3_LLVM_VERSION "" CACHE STRING "LLVM major version to use (19 or 16; empty: 19, else 16)")
if(NOT R3_ENABLE_LLVM STREQUAL "OFF")
  set(r3_llvm_candidates 19 16)
  if(R3_LLVM_VERSION)
    set(r3_llvm_candidates ${R3_LLVM_VERSION})
  endif()
  foreach(version ${r3_llvm_candidates})
    # A cache from a configure with another version is forgotten before anything is loaded
    # (loading two LLVMs' imported targets would mix them).
    if(LLVM_DIR AND EXISTS "${LLVM_DIR}/LLVMConfigVersion.cmake")
      set(PACKAGE_FIND_VERSION ${version})
      include("${LLVM_DIR}/LLVMConfigVersion.cmake")
      if(NOT PACKAGE_VERSION MATCHES "^${version}\\.")
        unset(LLVM_DIR CACHE)
        unset(Clang_DIR CACHE)
      endif()
    endif()
    # No version in the request: LLVM's version file accepts only the same major.minor.
    find_package(LLVM CONFIG QUIET HINTS /usr/lib/llvm-${version}/lib/cmake/llvm)
    if(LLVM_FOUND AND LLVM_VERSION_MAJOR EQUAL version)
      find_package(Clang CONFIG QUIET HINTS "${LLVM_INSTALL_PREFIX}/lib/cmake/clang"
        /usr/lib/cmake/clang-${version})
      if(Clang_FOUND)
        break()
      endif()
    endif()
    unset(LLVM_DIR CACHE)
    unset(Clang_DIR CACHE)
    set(LLVM_FOUND FALSE)
  endforeach()
  if(LLVM_FOUND AND Clang_FOUND)
    set(R3_HAVE_LLVM 1)
    r3_summary_found(LLVM "${LLVM_PACKAGE_VERSION} with Clang" "${LLVM_INSTALL_PREFIX}")
  elseif(R3_ENABLE_LLVM STREQUAL "ON")
    message(FATAL_ERROR "R3_ENABLE_LLVM=ON but LLVM with Clang (19, or 16) was not found. "
      "Debian/Ubuntu: apt-get install llvm-19-dev libclang-19-dev clang-19 libpolly-19-dev; "
      "Spack: llvm@19+clang; or set LLVM_DIR and Clang_DIR.")
  else()
    r3_summary_missing(LLVM "LLVM + Clang 19 (or 16) not found")
  endif()
else()
  r3_summary_off(LLVM "R3_ENABLE_LLVM=OFF")
endif()

# --- Kokkos (AUTO) ------------------------------------------------------------------------------
set(R3_HAVE_KOKKOS 0)
if(NOT R3_ENABLE_KOKKOS STREQUAL "OFF")
  find_package(Kokkos CONFIG QUIET)
  if(Kokkos_FOUND)
    # Debian's Trilinos Kokkos exports /usr/lib/include (which does not exist) as its include
    # directory; its headers are in /usr/include/trilinos. Point the target at the real one.
    get_target_property(_r3_kokkos_inc Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
    find_path(R3_KOKKOS_INCLUDE_DIR Kokkos_Core.hpp HINTS ${_r3_kokkos_inc}
      PATH_SUFFIXES trilinos kokkos DOC "Directory of Kokkos_Core.hpp")
    set(_r3_kokkos_inc_ok TRUE)
    foreach(_dir IN LISTS _r3_kokkos_inc)
      if(NOT _dir MATCHES "^\\$<" AND NOT EXISTS "${_dir}")
        set(_r3_kokkos_inc_ok FALSE)
      endif()
    endforeach()
    if(NOT _r3_kokkos_inc_ok AND R3_KOKKOS_INCLUDE_DIR)
      set_target_properties(Kokkos::kokkos PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES "${R3_KOKKOS_INCLUDE_DIR}")
    endif()
    # Whether Kokkos passes tuning requests to tools (Kokkos_ENABLE_TUNING).
    set(R3_KOKKOS_HAS_TUNING 0)
    if(EXISTS "${R3_KOKKOS_INCLUDE_DIR}/KokkosCore_config.h")
      file(STRINGS "${R3_KOKKOS_INCLUDE_DIR}/KokkosCore_config.h" _r3_tuning
        REGEX "^#define KOKKOS_ENABLE_TUNING")
      if(_r3_tuning)
        set(R3_KOKKOS_HAS_TUNING 1)
      endif()
    endif()
    set(R3_HAVE_KOKKOS 1)
    if(R3_KOKKOS_HAS_TUNING)
      r3_summary_found(Kokkos "${Kokkos_VERSION}, with tuning" "${Kokkos_DIR}")
    else()
      r3_summary_found(Kokkos "${Kokkos_VERSION}, without Kokkos_ENABLE_TUNING" "${Kokkos_DIR}")
    endif()
  elseif(R3_ENABLE_KOKKOS STREQUAL "ON")
    message(FATAL_ERROR "R3_ENABLE_KOKKOS=ON but Kokkos was not found. Debian/Ubuntu: "
      "apt-get install libtrilinos-kokkos-dev; Spack: kokkos; or set Kokkos_DIR.")
  else()
    r3_summary_missing(Kokkos "not found")
  endif()
else()
  r3_summary_off(Kokkos "R3_ENABLE_KOKKOS=OFF")
endif()

# --- cpp-httplib: a local chat server for the tests and bench/llm_overlap (required with tests) --
find_package(CppHttplib 0.10 QUIET)
if(CppHttplib_FOUND)
  r3_summary_found(cpp-httplib "${CppHttplib_VERSION}" "${CppHttplib_INCLUDE_DIR}")
else()
  r3_summary_missing(cpp-httplib "not found; needed by the tests and bench/llm_overlap")
endif()

# --- tests --------------------------------------------------------------------------------------
if(R3_BUILD_TESTS)
  find_package(GTest 1.10 CONFIG QUIET)
  r3_require(GTest "libgtest-dev libgmock-dev" googletest)
  r3_summary_found(GoogleTest "${GTest_VERSION}" "${GTest_DIR}")
  # The tests run a real HTTP server on 127.0.0.1 in place of an LLM endpoint.
  r3_require(CppHttplib libcpp-httplib-dev cpp-httplib)
endif()
