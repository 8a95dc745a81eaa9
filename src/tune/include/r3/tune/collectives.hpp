// What the tuning job needs of MPI, as an interface: libr3tune has no MPI dependency; r3-mpi
// implements it over MPI_COMM_WORLD (or as one process in builds without MPI).
#pragma once

#include <optional>
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

  // Point to point, after set-up. send() does not wait for the receiver (the bytes are kept
  // until delivered), so two ranks sending to each other never deadlock.
  virtual void send(int to, std::string bytes) const = 0;
  struct Message {
    int from = 0;
    std::string bytes;
  };
  // The next message from any rank, waiting at most `timeout_s` (0: only what has arrived)
  // without spinning: an idle rank leaves its core to the others (a node's evaluators, the
  // sandboxes, rank 0's search). nullopt when none came.
  virtual std::optional<Message> receive(double timeout_s) const = 0;
  // Whether send() and receive() may be called from a thread other than the one that made this
  // object (one thread at a time: MPI_THREAD_SERIALIZED). Rank 0 then serves its evaluators from
  // a thread of their own, whatever its search is doing.
  virtual bool serves_from_any_thread() const { return false; }
};

}  // namespace r3::tune
