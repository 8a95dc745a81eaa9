// The processes of an r3-mpi job: MPI_COMM_WORLD when built with MPI, else this process alone.
// CMake compiles world_mpi.cpp or world_serial.cpp, so no code here tests R3_HAVE_MPI.
#pragma once

namespace r3 {

class World {
 public:
  World(int& argc, char**& argv);  // MPI_Init; sets the log prefix rank
  ~World();                        // MPI_Finalize
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Every rank returns rank 0's `value` (collective).
  int broadcast(int value) const;

 private:
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace r3
