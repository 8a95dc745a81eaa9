// r3-sandbox: the evaluation sandbox's child process. r3-mpi's evaluators start it with two
// pipes on descriptors 3 (requests) and 4 (answers); it is not meant to be run by hand. As
// `--compile-worker` it is a compile pool's worker process, on the same descriptors.
#include <cstdio>
#include <cstring>

#include "r3/replay/compile_pool.hpp"
#include "r3/replay/sandbox.hpp"

int main(int argc, char** argv) {
  // A compile worker of a CompilePool (the sandbox child's, or a benchmark's).
  if (argc == 2 && std::strcmp(argv[1], "--compile-worker") == 0)
    return r3::replay::compile_worker_main(3, 4);
  if (argc != 2 || std::strcmp(argv[1], "--serve") != 0) {
    std::fprintf(stderr,
                 "r3-sandbox: runs tuning candidates for r3-mpi's evaluators, isolated from them.\n"
                 "It is started by r3-mpi with two pipes on descriptors 3 (requests) and 4 "
                 "(answers)\nas 'r3-sandbox --serve'; it is not meant to be run by hand.\n");
    return argc == 2 && std::strcmp(argv[1], "--help") == 0 ? 0 : 2;
  }
  return r3::replay::sandbox_child_main(3, 4);
}
