# Generates <build>/include/r3/config.hpp, the one header with R3_HAVE_* and versions.
set(R3_GIT_REVISION "unknown")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${PROJECT_SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" describe --always --dirty --abbrev=12
    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}" OUTPUT_VARIABLE git_revision
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE git_result)
  if(git_result EQUAL 0 AND git_revision)
    set(R3_GIT_REVISION "${git_revision}")
  endif()
endif()

set(R3_CUDA_VERSION "")
if(R3_HAVE_CUDA)
  set(R3_CUDA_VERSION "${CUDAToolkit_VERSION}")
endif()
set(R3_LLVM_VERSION "")
if(R3_HAVE_LLVM)
  set(R3_LLVM_VERSION "${LLVM_PACKAGE_VERSION}")
endif()
set(R3_KOKKOS_VERSION "")
if(R3_HAVE_KOKKOS)
  set(R3_KOKKOS_VERSION "${Kokkos_VERSION}")
endif()
set(R3_MPI_VERSION "")
if(R3_HAVE_MPI)
  set(R3_MPI_VERSION "${mpi_flavour}")
endif()

set(R3_GENERATED_INCLUDE_DIR "${PROJECT_BINARY_DIR}/include")
configure_file("${PROJECT_SOURCE_DIR}/cmake/config.hpp.in"
               "${R3_GENERATED_INCLUDE_DIR}/r3/config.hpp" @ONLY)
