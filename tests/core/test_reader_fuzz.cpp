// The capture and run-database readers on damaged files: random byte flips, truncations, spans
// zeroed, deleted or copied from elsewhere in the file (HDF5 addresses and signatures where they
// do not belong). Every input is either refused with an r3::Error or read exactly as written
// (the damage hit unused bytes); none crashes, hangs, throws anything else or is read wrong.
// R3_FUZZ_INPUTS sets the number of inputs per reader (default 5000: 10^4 in all in CI),
// R3_FUZZ_SEED the seed added to each reader's own (runs in parallel by hand take one each).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "r3/capture.hpp"
#include "r3/error.hpp"
#include "r3/run_database.hpp"
#include "support/random_capture.hpp"
#include "support/sample_run.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using r3::test::TempDir;

int fuzz_inputs() {
  const char* text = std::getenv("R3_FUZZ_INPUTS");
  return text != nullptr && std::atoi(text) > 0 ? std::atoi(text) : 5000;
}

std::vector<char> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// One damaged copy of `original`; `what` says how it was damaged, to reproduce a failure.
std::vector<char> damage(const std::vector<char>& original, std::mt19937_64& rng,
                         std::string& what) {
  std::vector<char> out = original;
  auto at = [&](std::size_t size) { return static_cast<std::size_t>(rng() % size); };
  switch (rng() % 5) {
    case 0: {  // a few bytes flipped
      int flips = 1 + static_cast<int>(rng() % 4);
      what = "flipped bytes at";
      for (int i = 0; i < flips; ++i) {
        std::size_t offset = at(out.size());
        out[offset] = static_cast<char>(out[offset] ^ static_cast<char>(1 + rng() % 255));
        what += " " + std::to_string(offset);
      }
      break;
    }
    case 1: {  // truncated (a disk that filled up, a copy cut short)
      std::size_t size = at(out.size());
      out.resize(size);
      what = "truncated to " + std::to_string(size) + " bytes";
      break;
    }
    case 2: {  // a span zeroed (a lost block)
      std::size_t offset = at(out.size());
      std::size_t length = std::min<std::size_t>(1 + rng() % 512, out.size() - offset);
      std::fill_n(out.begin() + static_cast<std::ptrdiff_t>(offset), length, '\0');
      what = "zeroed " + std::to_string(length) + " bytes at " + std::to_string(offset);
      break;
    }
    case 3: {  // a span copied from elsewhere: structure where it does not belong
      std::size_t from = at(out.size()), to = at(out.size());
      std::size_t length =
          std::min<std::size_t>({1 + rng() % 64, out.size() - from, out.size() - to});
      std::copy_n(original.begin() + static_cast<std::ptrdiff_t>(from), length,
                  out.begin() + static_cast<std::ptrdiff_t>(to));
      what = "copied " + std::to_string(length) + " bytes from " + std::to_string(from) + " to " +
             std::to_string(to);
      break;
    }
    default: {  // a span deleted: everything after it moves
      std::size_t offset = at(out.size());
      std::size_t length = std::min<std::size_t>(1 + rng() % 64, out.size() - offset);
      out.erase(out.begin() + static_cast<std::ptrdiff_t>(offset),
                out.begin() + static_cast<std::ptrdiff_t>(offset + length));
      what = "deleted " + std::to_string(length) + " bytes at " + std::to_string(offset);
      break;
    }
  }
  return out;
}

struct Tally {
  int refused = 0;
  int read_intact = 0;
};

// Runs `read` on damaged copies of `original`, each in a child process so that a crash or a
// hang shows up as a failure naming the damage instead of ending the test program. `read`
// returns whether what it read equals what was written.
Tally fuzz(const std::vector<char>& original, const fs::path& path, std::uint64_t seed,
           const std::function<bool(const fs::path&)>& read) {
  const char* extra = std::getenv("R3_FUZZ_SEED");
  std::mt19937_64 rng(seed + (extra != nullptr ? std::strtoull(extra, nullptr, 10) : 0));
  Tally tally;
  const int inputs = fuzz_inputs();
  for (int input = 0; input < inputs; ++input) {
    std::string what;
    std::vector<char> damaged = damage(original, rng, what);
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(damaged.data(), static_cast<std::streamsize>(damaged.size()));
    pid_t child = fork();
    if (child < 0) ADD_FAILURE() << "fork failed";
    if (child < 0) return tally;
    if (child == 0) {
      alarm(60);  // the readers give up on a looping HDF5 after 10 s of CPU time
      try {
        _exit(read(path) ? 0 : 3);
      } catch (const r3::Error&) {
        _exit(1);
      } catch (...) {
        _exit(2);
      }
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status)) {
      ADD_FAILURE() << "input " << input << " (" << what << "): the reader "
                    << (WTERMSIG(status) == SIGALRM ? "hung" : "crashed") << " (signal "
                    << WTERMSIG(status) << ")";
      return tally;
    }
    if (WEXITSTATUS(status) == 2) ADD_FAILURE() << "input " << input << " (" << what << "): not an r3::Error";
    if (WEXITSTATUS(status) == 3) ADD_FAILURE() << "input " << input << " (" << what << "): read wrong, unnoticed";
    if (WEXITSTATUS(status) >= 2) return tally;
    (WEXITSTATUS(status) == 0 ? tally.read_intact : tally.refused)++;
  }
  return tally;
}

TEST(ReaderFuzz, DamagedCapturesAreRefusedOrReadIntactNeverACrashOrAHang) {
  TempDir dir;
  r3::test::CaptureShape shape{2, 2, 3};
  shape.sizes = {16, 3000, 70000};
  const r3::test::ExpectedCapture expected = r3::test::random_capture(77, shape);
  r3::test::write_capture(dir / "capture.h5", expected);
  Tally tally = fuzz(read_file(dir / "capture.h5"), dir / "damaged.h5", 2026, [&](const fs::path& path) {
    r3::capture::CaptureReader reader = r3::capture::CaptureReader::open(path);
    reader.verify_contents();
    bool same = reader.info() == expected.info && reader.kernels() == expected.kernels;
    for (const auto& [hash, bytes] : expected.contents) same = same && reader.read_content(hash) == bytes;
    return same;
  });
  EXPECT_EQ(tally.refused + tally.read_intact, fuzz_inputs());
  EXPECT_GT(tally.refused, 0);
  RecordProperty("refused", tally.refused);
  RecordProperty("read_intact", tally.read_intact);
}

TEST(ReaderFuzz, DamagedRunDatabasesAreRefusedOrReadIntactNeverACrashOrAHang) {
  TempDir dir;
  const r3::run::RunRecord written = r3::test::sample_run(25);
  r3::run::write_run_database(dir / "run.h5", written);
  Tally tally = fuzz(read_file(dir / "run.h5"), dir / "damaged.h5", 2027, [&](const fs::path& path) {
    if (!r3::run::is_run_database(path)) throw r3::FormatError("not a run database");
    r3::run::RunRecord read = r3::run::read_run_database(path);
    return read.tune_yaml == written.tune_yaml && read.tune_file == written.tune_file &&
           read.r3_version == written.r3_version && read.generations == written.generations &&
           read.sessions == written.sessions && read.elapsed_seconds == written.elapsed_seconds &&
           read.search_state == written.search_state && read.sources == written.sources &&
           read.candidates == written.candidates && read.confirmations == written.confirmations;
  });
  EXPECT_EQ(tally.refused + tally.read_intact, fuzz_inputs());
  EXPECT_GT(tally.refused, 0);
  RecordProperty("refused", tally.refused);
  RecordProperty("read_intact", tally.read_intact);
}

}  // namespace
