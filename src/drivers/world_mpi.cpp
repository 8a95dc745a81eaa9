#include <mpi.h>

#include <algorithm>
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

}  // namespace

World::World(int& argc, char**& argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &node_rank_);
  MPI_Comm_size(node, &node_size_);
  MPI_Comm_free(&node);
  log::set_rank(size_ > 1 ? rank_ : -1);
}

World::~World() { MPI_Finalize(); }

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

}  // namespace r3
