// The processes of an r3-mpi job: MPI_COMM_WORLD when built with MPI, else this process alone.
// CMake compiles world_mpi.cpp or world_serial.cpp, so no code here tests R3_HAVE_MPI.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "r3/tune/collectives.hpp"

namespace r3 {

class World final : public tune::Collectives {
 public:
  World(int& argc, char**& argv);  // MPI_Init_thread; sets the log prefix rank
  ~World() override;               // MPI_Finalize
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int node_rank() const override { return node_rank_; }
  int node_size() const override { return node_size_; }
  // Every rank returns rank 0's `value` (collective).
  int broadcast(int value) const;
  std::string broadcast(std::string bytes) const override;
  std::vector<std::string> gather(const std::string& bytes) const override;
  void send(int to, std::string bytes) const override;
  std::optional<Message> receive(double timeout_s) const override;
  bool serves_from_any_thread() const override { return serialized_threads_; }

 private:
  // Sends under way (MPI_Isend), with the bytes they send; completed ones are dropped as
  // receive() and send() go by, and ~World waits for the rest. Mutable: sending is not a change
  // of the world as the job sees it.
  struct Sending;
  mutable std::vector<std::unique_ptr<Sending>> sending_;
  void complete_sends(bool wait) const;
  int rank_ = 0;
  int size_ = 1;
  int node_rank_ = 0;
  int node_size_ = 1;
  bool serialized_threads_ = false;  // MPI granted MPI_THREAD_SERIALIZED or more
};

}  // namespace r3
