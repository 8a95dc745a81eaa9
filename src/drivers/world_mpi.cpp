#include <mpi.h>

#include "r3/log.hpp"
#include "world.hpp"

namespace r3 {

World::World(int& argc, char**& argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  log::set_rank(size_ > 1 ? rank_ : -1);
}

World::~World() { MPI_Finalize(); }

int World::broadcast(int value) const {
  MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return value;
}

}  // namespace r3
