// The capture and run-database readers on damaged files: random byte flips, truncations, spans
// zeroed, deleted or copied from elsewhere in the file (HDF5 addresses and signatures where they
// do not belong). Every input is either refused with an r3::Error or read exactly as written
// (the damage hit unused bytes); none crashes, hangs, throws anything else or is read wrong.
// R3_FUZZ_INPUTS sets the number of inputs per reader (default 2500: 5000 in all in CI; more by
// hand, e.g. R3_FUZZ_INPUTS=20000),
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
  return text != nullptr && std::atoi(text) > 0 ? std::atoi(text) : 2500;
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

// What became of one input, as a child reports it (one byte on a pipe).
enum Outcome : char { kReadIntact = 0, kRefused = 1, kNotAnR3Error = 2, kReadWrong = 3 };

Outcome outcome_of(const std::function<bool(const fs::path&)>& read, const fs::path& path) {
  try {
    return read(path) ? kReadIntact : kReadWrong;
  } catch (const r3::Error&) {
    return kRefused;
  } catch (...) {
    return kNotAnR3Error;
  }
}

// How a child that read `paths` in turn ended: whether it could be started, the outcomes it
// reported (one per input, in order, each sent as soon as known), and its wait status.
struct ChildEnd {
  bool started = false;
  std::vector<Outcome> outcomes;
  int status = 0;
};

// Reads `paths` in turn in one forked child, so that a crash or a hang ends the child, not the test
// program; the outcomes reported before it ended say which input it ended on.
ChildEnd read_in_child(const std::vector<fs::path>& paths,
                       const std::function<bool(const fs::path&)>& read) {
  ChildEnd end;
  int reports[2];
  if (::pipe(reports) != 0) {
    ADD_FAILURE() << "pipe failed";
    return end;
  }
  const pid_t child = fork();
  if (child < 0) {
    ADD_FAILURE() << "fork failed";
    ::close(reports[0]);
    ::close(reports[1]);
    return end;
  }
  if (child == 0) {
    ::close(reports[0]);
    for (const fs::path& path : paths) {
      alarm(60);  // the readers give up on a looping HDF5 after 2 s of CPU time (small files)
      char outcome = outcome_of(read, path);
      if (::write(reports[1], &outcome, 1) != 1) _exit(4);
    }
    _exit(0);
  }
  end.started = true;
  ::close(reports[1]);
  char outcome = 0;
  while (::read(reports[0], &outcome, 1) == 1) end.outcomes.push_back(Outcome{outcome});
  ::close(reports[0]);
  waitpid(child, &end.status, 0);
  return end;
}

std::string how_it_ended(int status) {
  if (WIFSIGNALED(status))
    return std::string(WTERMSIG(status) == SIGALRM ? "hung" : "crashed") + " (signal " +
           std::to_string(WTERMSIG(status)) + ")";
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

// Runs `read` on damaged copies of `original`, kInputsPerChild at a time in one child process: a
// fork per input was a tenth of the test's time, and a reader that leaves state behind (HDF5
// identifiers, a lock) is a bug this way finds too. An input the child crashed or hung on is read
// once more alone in a fresh child, so that the failure says whether the damage itself or the
// inputs before it did it. `read` returns whether what it read equals what was written.
Tally fuzz(const std::vector<char>& original, const fs::path& dir, std::uint64_t seed,
           const std::function<bool(const fs::path&)>& read) {
  constexpr int kInputsPerChild = 50;
  const char* extra = std::getenv("R3_FUZZ_SEED");
  std::mt19937_64 rng(seed + (extra != nullptr ? std::strtoull(extra, nullptr, 10) : 0));
  Tally tally;
  const int inputs = fuzz_inputs();
  for (int first = 0; first < inputs; first += kInputsPerChild) {
    std::vector<fs::path> paths;
    std::vector<std::string> whats;
    for (int input = first; input < std::min(inputs, first + kInputsPerChild); ++input) {
      whats.emplace_back();
      std::vector<char> damaged = damage(original, rng, whats.back());
      paths.push_back(dir / ("damaged" + std::to_string(paths.size()) + ".h5"));
      std::ofstream(paths.back(), std::ios::binary | std::ios::trunc)
          .write(damaged.data(), static_cast<std::streamsize>(damaged.size()));
    }
    const ChildEnd end = read_in_child(paths, read);
    if (!end.started) return tally;
    for (std::size_t i = 0; i < end.outcomes.size(); ++i) {
      const std::string input =
          "input " + std::to_string(first + static_cast<int>(i)) + " (" + whats[i] + ")";
      if (end.outcomes[i] == kNotAnR3Error) ADD_FAILURE() << input << ": not an r3::Error";
      if (end.outcomes[i] == kReadWrong) ADD_FAILURE() << input << ": read wrong, unnoticed";
      if (end.outcomes[i] >= kNotAnR3Error) return tally;
      (end.outcomes[i] == kReadIntact ? tally.read_intact : tally.refused)++;
    }
    if (end.outcomes.size() < paths.size()) {
      const std::size_t i = end.outcomes.size();
      const ChildEnd alone = read_in_child({paths[i]}, read);
      ADD_FAILURE() << "input " << first + static_cast<int>(i) << " (" << whats[i]
                    << "): the reader " << how_it_ended(end.status) << " after " << i
                    << " other inputs in the same process; read alone in a fresh process it "
                    << (!alone.started                     ? "could not be read (no child)"
                        : alone.outcomes.empty()           ? how_it_ended(alone.status)
                        : alone.outcomes[0] == kRefused    ? "was refused"
                        : alone.outcomes[0] == kReadIntact ? "was read intact"
                                                           : "failed too");
      return tally;
    }
  }
  return tally;
}

TEST(ReaderFuzz, DamagedCapturesAreRefusedOrReadIntactNeverACrashOrAHang) {
  TempDir dir;
  r3::test::CaptureShape shape{2, 2, 3};
  shape.sizes = {16, 3000, 70000};
  const r3::test::ExpectedCapture expected = r3::test::random_capture(77, shape);
  r3::test::write_capture(dir / "capture.h5", expected);
  Tally tally = fuzz(read_file(dir / "capture.h5"), dir.path(), 2026, [&](const fs::path& path) {
    r3::capture::CaptureReader reader = r3::capture::CaptureReader::open(path);
    reader.verify_contents();
    bool same = reader.info() == expected.info && reader.kernels() == expected.kernels;
    for (const auto& [hash, bytes] : expected.contents)
      same = same && reader.read_content(hash) == bytes;
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
  Tally tally = fuzz(read_file(dir / "run.h5"), dir.path(), 2027, [&](const fs::path& path) {
    std::optional<r3::run::RunRecord> maybe = r3::run::read_if_run_database(path);
    if (!maybe) throw r3::FormatError("not a run database");
    const r3::run::RunRecord& read = *maybe;
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
