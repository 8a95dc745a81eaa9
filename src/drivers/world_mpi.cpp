#include <mpi.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <climits>

#include "r3/error.hpp"
#include "r3/log.hpp"
#include "world.hpp"

namespace r3 {
namespace {

// MPI counts are ints: large messages (a capture of several GiB) go in pieces.
constexpr std::size_t kPiece = std::size_t{1} << 30;

void check(int status, const char* api) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  throw IoError(api, std::string(text, static_cast<std::size_t>(length)));
}

// Point-to-point messages after set-up all carry this tag.
constexpr int kMessageTag = 7;

}  // namespace

struct World::Sending {
  std::string bytes;
  MPI_Request request = MPI_REQUEST_NULL;
};

World::World(int& argc, char**& argv) {
  // Serialized threads: rank 0's dispatcher talks to the evaluators from a thread of its own
  // (src/tune/dispatcher.hpp), never two threads at once. An MPI that grants less gets a rank 0
  // that serves them between its search's steps.
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  serialized_threads_ = provided >= MPI_THREAD_SERIALIZED;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &node_rank_);
  MPI_Comm_size(node, &node_size_);
  MPI_Comm_free(&node);
  log::set_rank(size_ > 1 ? rank_ : -1);
}

World::~World() {
  complete_sends(/*wait=*/true);
  MPI_Finalize();
}

int World::broadcast(int value) const {
  MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return value;
}

std::string World::broadcast(std::string bytes) const {
  unsigned long long size = bytes.size();
  check(MPI_Bcast(&size, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD), "MPI_Bcast");
  bytes.resize(size);
  for (std::size_t at = 0; at < size; at += kPiece) {
    int n = static_cast<int>(std::min<std::size_t>(kPiece, size - at));
    check(MPI_Bcast(bytes.data() + at, n, MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
  }
  return bytes;
}

std::vector<std::string> World::gather(const std::string& bytes) const {
  if (bytes.size() > INT_MAX) throw IoError("MPI_Gatherv", "a result message of more than 2 GiB");
  int size = static_cast<int>(bytes.size());
  std::vector<int> sizes(rank_ == 0 ? size_ : 0);
  check(MPI_Gather(&size, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
  std::vector<int> offsets(sizes.size(), 0);
  long long total = 0;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    offsets[r] = static_cast<int>(total);
    total += sizes[r];
  }
  if (total > INT_MAX) throw IoError("MPI_Gatherv", "the results of one generation exceed 2 GiB");
  std::string all(static_cast<std::size_t>(total), '\0');
  check(MPI_Gatherv(bytes.data(), size, MPI_BYTE, all.data(), sizes.data(), offsets.data(),
                    MPI_BYTE, 0, MPI_COMM_WORLD),
        "MPI_Gatherv");
  std::vector<std::string> out;
  for (std::size_t r = 0; r < sizes.size(); ++r) out.push_back(all.substr(offsets[r], sizes[r]));
  return out;
}

void World::send(int to, std::string bytes) const {
  if (bytes.size() > INT_MAX) throw IoError("MPI_Isend", "a message of more than 2 GiB");
  auto sending = std::make_unique<Sending>();
  sending->bytes = std::move(bytes);
  check(MPI_Isend(sending->bytes.data(), static_cast<int>(sending->bytes.size()), MPI_BYTE, to,
                  kMessageTag, MPI_COMM_WORLD, &sending->request),
        "MPI_Isend");
  sending_.push_back(std::move(sending));
  complete_sends(/*wait=*/false);
}

void World::complete_sends(bool wait) const {
  for (auto it = sending_.begin(); it != sending_.end();) {
    int done = 0;
    if (wait)
      MPI_Wait(&(*it)->request, MPI_STATUS_IGNORE), done = 1;
    else
      MPI_Test(&(*it)->request, &done, MPI_STATUS_IGNORE);
    it = done ? sending_.erase(it) : it + 1;
  }
}

std::optional<tune::Collectives::Message> World::receive(double timeout_s) const {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(std::max(0.0, timeout_s));
  // Polled with sleeps that grow from 50 us to 2 ms: a blocking MPI_Recv spins (Open MPI yields
  // at best), and oversubscribed ranks that spin take the cores their neighbours need.
  long pause_ns = 50'000;
  while (true) {
    int arrived = 0;
    MPI_Status status;
    check(MPI_Iprobe(MPI_ANY_SOURCE, kMessageTag, MPI_COMM_WORLD, &arrived, &status), "MPI_Iprobe");
    if (arrived) {
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      Message message;
      message.from = status.MPI_SOURCE;
      message.bytes.resize(static_cast<std::size_t>(count));
      check(MPI_Recv(message.bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, kMessageTag,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE),
            "MPI_Recv");
      complete_sends(/*wait=*/false);
      return message;
    }
    complete_sends(/*wait=*/false);
    if (Clock::now() >= deadline) return std::nullopt;
    timespec pause{0, pause_ns};
    ::nanosleep(&pause, nullptr);
    pause_ns = std::min(pause_ns * 2, 2'000'000L);
  }
}

}  // namespace r3
