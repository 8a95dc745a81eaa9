// The rehearsal that reads an HDF5 file in a forked child before the caller reads it in process
// (src/core/capture/h5.hpp): a read that loops is cut off after a CPU limit that grows with the
// file's size, a read that crashes makes the file "damaged", a read that ends by itself (read or
// threw) lets the caller go on.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "h5.hpp"
#include "r3/error.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;

// A file of `bytes` that takes no space on disk (sparse).
fs::path sized_file(const fs::path& path, std::uintmax_t bytes) {
  std::ofstream(path).put('x');
  fs::resize_file(path, bytes);
  return path;
}

TEST(Rehearsal, TheCpuLimitGrowsWithTheFilesSizeUpToTenSeconds) {
  r3::test::TempDir dir;
  EXPECT_EQ(r3::h5::rehearsal_cpu_seconds(sized_file(dir / "small.h5", 100000).string()), 2u);
  EXPECT_EQ(r3::h5::rehearsal_cpu_seconds(sized_file(dir / "48MiB.h5", 48u << 20).string()), 5u);
  EXPECT_EQ(r3::h5::rehearsal_cpu_seconds(sized_file(dir / "1GiB.h5", 1u << 30).string()),
            r3::h5::kMostRehearsalCpuSeconds);
  // A file that cannot be sized gets the most: the rehearsal's own read reports why.
  EXPECT_EQ(r3::h5::rehearsal_cpu_seconds((dir / "missing.h5").string()),
            r3::h5::kMostRehearsalCpuSeconds);
}

TEST(Rehearsal, AReadThatLoopsOnASmallFileIsRefusedAfterTwoSecondsOfCpu) {
  r3::test::TempDir dir;
  const fs::path file = sized_file(dir / "loops.h5", 4096);
  const auto start = std::chrono::steady_clock::now();
  try {
    static volatile bool forever = true;
    r3::h5::rehearse_read(file.string(), "the capture", [] {
      while (forever) {
      }
    });
    ADD_FAILURE() << "a read that never ends was not refused";
  } catch (const r3::FormatError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("the capture is damaged: reading it took more than 2 s of CPU time"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find(file.string()), std::string::npos) << message;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(seconds, 1.9);
  EXPECT_LT(seconds, 8.0) << "the limit is CPU time: only a machine this loaded would take longer";
}

TEST(Rehearsal, AReadThatCrashesMakesTheFileDamagedAndOneThatThrowsLetsTheCallerReadIt) {
  r3::test::TempDir dir;
  const fs::path file = sized_file(dir / "run.h5", 4096);
  try {
    r3::h5::rehearse_read(file.string(), "the run database", [] { ::raise(SIGSEGV); });
    ADD_FAILURE() << "a read that crashed was not refused";
  } catch (const r3::FormatError& error) {
    EXPECT_NE(std::string(error.what())
                  .find("the run database is damaged: reading it crashed the HDF5 library"),
              std::string::npos)
        << error.what();
  }
  // The caller's own read then throws the same error, with its context: the rehearsal stays out of
  // the way.
  EXPECT_NO_THROW(r3::h5::rehearse_read(file.string(), "the run database",
                                        [] { throw std::runtime_error("not a run database"); }));
  EXPECT_NO_THROW(r3::h5::rehearse_read(file.string(), "the run database", [] {}));
}

}  // namespace
