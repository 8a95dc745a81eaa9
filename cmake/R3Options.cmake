# Feature options. Each optional dependency has one R3_ENABLE_<X> option:
#   ON    the dependency is required; configuring fails without it
#   OFF   it is not searched for and the feature is left out
#   AUTO  it is used when found (the configure summary says which way it went)
# The outcome is R3_HAVE_<X> (0/1), which lands in the generated r3/config.hpp.

function(r3_tristate_option name default doc)
  set(${name} "${default}" CACHE STRING "${doc} (ON, OFF, AUTO)")
  set_property(CACHE ${name} PROPERTY STRINGS ON OFF AUTO)
  string(TOUPPER "${${name}}" value)
  if(value MATCHES "^(1|YES|TRUE|Y)$")
    set(value ON)
  elseif(value MATCHES "^(0|NO|FALSE|N)$")
    set(value OFF)
  endif()
  if(NOT value MATCHES "^(ON|OFF|AUTO)$")
    message(FATAL_ERROR "${name}=${${name}}: expected ON, OFF or AUTO")
  endif()
  set(${name} "${value}" PARENT_SCOPE)
endfunction()

r3_tristate_option(R3_ENABLE_CUDA AUTO
  "CUDA backend and recorder: CUDA driver API, NVRTC, CUPTI (CUDA Toolkit >= 12.4)")
r3_tristate_option(R3_ENABLE_LLVM AUTO
  "Clang/LLVM 19 compile pipeline (host JIT, NVPTX, source mutators)")
r3_tristate_option(R3_ENABLE_KOKKOS AUTO
  "Kokkos Tools connector and its tests against an installed Kokkos")
r3_tristate_option(R3_ENABLE_SECCOMP AUTO
  "seccomp filter (libseccomp) confining host-backend candidates in the evaluation sandbox")
option(R3_ENABLE_MPI "Build r3-mpi against MPI (without it r3-mpi runs as one process)" ON)
option(R3_BUILD_TESTS "Build the test suite (GoogleTest, CTest labels unit/integration/mpi/gpu)" ON)
option(BUILD_SHARED_LIBS "Build r3's libraries as shared libraries" ON)
