# Initial cache for CI's build (`cmake -C`, from .ci/run): optimised as the default build
# (RelWithDebInfo, -O2) but without debug information, which took a third of the compile time
# (the LLVM/Clang-heavy files most) and which nothing in CI reads.
set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type")
set(CMAKE_C_FLAGS_RELEASE "-O2 -DNDEBUG" CACHE STRING "C flags of a Release build")
set(CMAKE_CXX_FLAGS_RELEASE "-O2 -DNDEBUG" CACHE STRING "C++ flags of a Release build")
