// What the tuning job needs of MPI, as an interface: libr3tune has no MPI dependency; r3-mpi
// implements it over MPI_COMM_WORLD (or as one process in builds without MPI).
#pragma once

#include <string>
#include <vector>

namespace r3::tune {

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // This process's rank among the processes of its node (MPI_Comm_split_type shared).
  virtual int node_rank() const = 0;
  virtual int node_size() const = 0;  // the processes of this node
  // Every rank returns rank 0's `bytes` (collective; any size).
  virtual std::string broadcast(std::string bytes) const = 0;
  // Rank 0 returns every rank's `bytes`, in rank order; the others an empty list (collective).
  virtual std::vector<std::string> gather(const std::string& bytes) const = 0;
};

}  // namespace r3::tune
