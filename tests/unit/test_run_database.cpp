// run.h5: what is written is read back exactly; a commit replaces the file whole; files that
// are not run databases, or newer ones, are refused with the file's name.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <fstream>

#include "r3/error.hpp"
#include "r3/run_database.hpp"
#include "support/temp_dir.hpp"

namespace {

using namespace r3::run;
using r3::test::TempDir;

RunRecord sample(std::size_t candidates) {
  RunRecord r;
  r.tune_yaml = "capture: demo.h5\nkernels: [stencil2d]\n";
  r.tune_file = "/tmp/tune.yaml";
  r.r3_version = "0.1.0";
  r.generations = 3;
  r.elapsed_seconds = 12.5;
  r.sessions = 2;
  r.search_state = R"({"rng":"1 2 3"})";
  std::string a = "extern \"C\" void k() {}\n", b = "extern \"C\" void k() { /* b */ }\n";
  r.sources[r3::hash_string(a)] = a;
  r.sources[r3::hash_string(b)] = b;
  for (std::size_t i = 0; i < candidates; ++i) {
    CandidateRecord c;
    c.id = i;
    c.generation = static_cast<std::uint32_t>(i / 4);
    c.parent = i == 0 ? -1 : 0;
    c.source = r3::hash_string(i % 2 ? b : a);
    c.level = i == 0 ? "original" : "compiler";
    c.plan = R"({"levels":{"compiler":[[2],[0]]}})";
    c.description = "opt=3 fast_math=" + std::string(i % 3 ? "on" : "off");
    c.outcome = i % 5 == 4 ? "crash" : "ok";
    c.message = i % 5 == 4 ? "killed by signal 11 (Segmentation fault)" : "";
    c.seconds = 1e-3 * (i + 1);
    c.min_seconds = c.seconds * 0.9;
    c.max_seconds = c.seconds * 1.1;
    c.registers = -1;
    c.code_bytes = 1000 + i;
    c.evaluator = static_cast<std::int32_t>(1 + i % 2);
    c.configuration = R"({"flags":["-ffast-math"],"passes":"default<O3>"})";
    c.run_seconds = 0.5 * static_cast<double>(c.generation + 1);
    r.candidates.push_back(c);
  }
  for (std::uint32_t round = 0; round < 3; ++round) {
    ConfirmationRecord c;
    c.candidate = round % 2 ? 0 : 3;
    c.after_generation = 3;
    c.round = round;
    c.evaluator = 2;
    c.repeats = 50;
    c.outcome = round == 2 ? "timeout" : "ok";
    c.message = round == 2 ? "took longer than 30 s" : "";
    c.seconds = 1e-3 * (round + 1);
    c.min_seconds = 0.9e-3;
    c.max_seconds = 4e-3;
    r.confirmations.push_back(c);
  }
  return r;
}

TEST(RunDatabase, RoundTripsEveryField) {
  TempDir dir;
  RunRecord written = sample(41);
  write_run_database(dir / "run.h5", written);
  EXPECT_TRUE(is_run_database(dir / "run.h5"));
  RunRecord read = read_run_database(dir / "run.h5");
  EXPECT_EQ(read.tune_yaml, written.tune_yaml);
  EXPECT_EQ(read.tune_file, written.tune_file);
  EXPECT_EQ(read.generations, 3u);
  EXPECT_EQ(read.sessions, 2u);
  EXPECT_DOUBLE_EQ(read.elapsed_seconds, 12.5);
  EXPECT_EQ(read.search_state, written.search_state);
  EXPECT_EQ(read.sources, written.sources);
  ASSERT_EQ(read.candidates.size(), written.candidates.size());
  for (std::size_t i = 0; i < read.candidates.size(); ++i)
    EXPECT_EQ(read.candidates[i], written.candidates[i]) << "candidate " << i;
  EXPECT_EQ(read.confirmations, written.confirmations);
}

TEST(RunDatabase, ACommitReplacesTheFileAndLeavesNoTemporary) {
  TempDir dir;
  write_run_database(dir / "run.h5", sample(4));
  write_run_database(dir / "run.h5", sample(9));
  EXPECT_EQ(read_run_database(dir / "run.h5").candidates.size(), 9u);
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1u);
}

TEST(RunDatabase, RefusesForeignNewerAndMissingFiles) {
  TempDir dir;
  std::ofstream(dir / "text.h5") << "not hdf5";
  EXPECT_THROW(read_run_database(dir / "text.h5"), r3::FormatError);
  EXPECT_THROW(read_run_database(dir / "missing.h5"), r3::IoError);
  write_run_database(dir / "run.h5", sample(2));
  hid_t file = H5Fopen((dir / "run.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  hid_t attribute = H5Aopen(file, "version", H5P_DEFAULT);
  std::uint64_t newer = kRunVersion + 1;
  H5Awrite(attribute, H5T_NATIVE_UINT64, &newer);
  H5Aclose(attribute);
  H5Fclose(file);
  try {
    read_run_database(dir / "run.h5");
    FAIL() << "a newer version was read";
  } catch (const r3::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("run.h5"), std::string::npos) << e.what();
  }
}

}  // namespace
