// run.h5: what is written is read back exactly; a commit replaces the file whole; files that
// are not run databases, or newer ones, are refused with the file's name.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <sys/mount.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

#include "image_file.hpp"
#include "r3/database_lock.hpp"
#include "r3/error.hpp"
#include "r3/run_database.hpp"
#include "support/sample_run.hpp"
#include "support/temp_dir.hpp"

namespace {

using namespace r3::run;
using r3::test::TempDir;

using r3::test::sample_run;

// Every field of `read` is `written`'s.
void expect_same_run(const RunRecord& read, const RunRecord& written) {
  EXPECT_EQ(read.tune_yaml, written.tune_yaml);
  EXPECT_EQ(read.tune_file, written.tune_file);
  EXPECT_EQ(read.r3_version, written.r3_version);
  EXPECT_EQ(read.generations, written.generations);
  EXPECT_EQ(read.sessions, written.sessions);
  EXPECT_EQ(read.elapsed_seconds, written.elapsed_seconds);
  EXPECT_EQ(read.search_state, written.search_state);
  EXPECT_EQ(read.sources, written.sources);
  ASSERT_EQ(read.candidates.size(), written.candidates.size());
  for (std::size_t i = 0; i < read.candidates.size(); ++i)
    EXPECT_EQ(read.candidates[i], written.candidates[i]) << "candidate " << i;
  EXPECT_EQ(read.confirmations, written.confirmations);
  EXPECT_EQ(read.codes, written.codes);
}

// r3 inspect's question, what a file is, and the run database read in the same rehearsal:
// another HDF5 file, a text file and a missing one are not run databases.
TEST(RunDatabase, ReadIfRunDatabaseTellsOtherFilesApart) {
  TempDir dir;
  const RunRecord written = sample_run(7);
  write_run_database(dir / "run.h5", written);
  const std::optional<RunRecord> read = read_if_run_database(dir / "run.h5");
  ASSERT_TRUE(read.has_value());
  expect_same_run(*read, written);
  const hid_t other =
      H5Fcreate((dir / "other.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(other, 0);
  H5Fclose(other);
  EXPECT_FALSE(read_if_run_database(dir / "other.h5").has_value());
  std::ofstream(dir / "notes.txt") << "not HDF5\n";
  EXPECT_FALSE(read_if_run_database(dir / "notes.txt").has_value());
  EXPECT_FALSE(read_if_run_database(dir / "missing.h5").has_value());
}

TEST(RunDatabase, RoundTripsEveryField) {
  TempDir dir;
  RunRecord written = sample_run(41);
  write_run_database(dir / "run.h5", written);
  RunRecord read = read_run_database(dir / "run.h5");
  EXPECT_EQ(read.generations, 3u);
  EXPECT_EQ(read.sessions, 2u);
  EXPECT_DOUBLE_EQ(read.elapsed_seconds, 12.5);
  ASSERT_EQ(read.codes.size(), 1u);
  expect_same_run(read, written);
}

// Levels and outcomes are typed in the process and text only in the file: every value goes out
// as the text docs/run-database.md lists and comes back as itself; other text is no value.
TEST(RunDatabase, EveryLevelAndOutcomeIsWrittenAsItsTextAndReadBack) {
  const std::vector<std::pair<CandidateLevel, std::string>> levels = {
      {CandidateLevel::original, "original"}, {CandidateLevel::rebuilt, "rebuilt"},
      {CandidateLevel::source, "source"},     {CandidateLevel::compiler, "compiler"},
      {CandidateLevel::launch, "launch"},     {CandidateLevel::parameters, "parameters"}};
  const std::vector<std::pair<r3::Outcome, std::string>> outcomes = {
      {r3::Outcome::ok, "ok"},
      {r3::Outcome::compile_error, "compile error"},
      {r3::Outcome::launch_error, "launch error"},
      {r3::Outcome::wrong_result, "wrong result"},
      {r3::Outcome::timeout, "timeout"},
      {r3::Outcome::crash, "crash"}};
  for (const auto& [level, text] : levels) {
    EXPECT_EQ(to_string(level), text);
    EXPECT_EQ(candidate_level_from_string(text), level);
  }
  for (const auto& [outcome, text] : outcomes) {
    EXPECT_EQ(to_string(outcome), text);
    EXPECT_EQ(r3::outcome_from_string(text), outcome);
  }
  EXPECT_FALSE(candidate_level_from_string("Compiler").has_value());
  EXPECT_FALSE(r3::outcome_from_string("compile_error").has_value());

  TempDir dir;
  RunRecord written = sample_run(36);
  for (std::size_t i = 0; i < written.candidates.size(); ++i) {
    written.candidates[i].level = levels[i % levels.size()].first;
    written.candidates[i].outcome = outcomes[(i / levels.size()) % outcomes.size()].first;
  }
  for (std::size_t i = 0; i < written.confirmations.size(); ++i)
    written.confirmations[i].outcome = outcomes[(i + 3) % outcomes.size()].first;
  write_run_database(dir / "run.h5", written);
  const RunRecord read = read_run_database(dir / "run.h5");
  ASSERT_EQ(read.candidates.size(), written.candidates.size());
  for (std::size_t i = 0; i < read.candidates.size(); ++i) {
    EXPECT_EQ(read.candidates[i].level, written.candidates[i].level) << "candidate " << i;
    EXPECT_EQ(read.candidates[i].outcome, written.candidates[i].outcome) << "candidate " << i;
  }
  EXPECT_EQ(read.confirmations, written.confirmations);
}

TEST(RunDatabase, ACommitReplacesTheFileAndLeavesNoTemporary) {
  TempDir dir;
  write_run_database(dir / "run.h5", sample_run(4));
  write_run_database(dir / "run.h5", sample_run(9));
  EXPECT_EQ(read_run_database(dir / "run.h5").candidates.size(), 9u);
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1u);
}

// The job's commits: one writer, a record that grows between them (candidates across the
// growing columns' chunk boundaries, sources, confirmations, codes, a changing search state).
// After each commit the file holds the whole record, as a fresh write of it does.
TEST(RunDatabase, AWriterCommitsAGrowingRecordWhole) {
  TempDir dir;
  const RunRecord full = sample_run(400);
  RunRecord record = full;
  record.candidates.resize(1);
  record.confirmations.clear();
  record.codes.clear();
  DatabaseWriter writer;
  std::size_t commits = 0;
  for (std::size_t rows : {1, 2, 3, 50, 51, 200, 400}) {
    record.candidates.assign(full.candidates.begin(), full.candidates.begin() + rows);
    record.generations = static_cast<std::uint32_t>(rows);
    record.elapsed_seconds = 0.25 * static_cast<double>(rows);
    record.search_state = R"({"rng":")" + std::to_string(rows) + R"("})";
    if (rows >= 50)
      record.confirmations.push_back(full.confirmations[record.confirmations.size() % 3]);
    if (rows == 200) record.codes = full.codes;
    if (rows == 51) {
      const std::string text(20000, static_cast<char>('a' + rows % 26));
      record.sources[r3::hash_string(text)] = text;
    }
    writer.commit(dir / "run.h5", record);
    ++commits;
    SCOPED_TRACE("after commit " + std::to_string(commits) + " (" + std::to_string(rows) +
                 " candidates)");
    expect_same_run(read_run_database(dir / "run.h5"), record);
  }
  // What a fresh write of the same record reads back as.
  write_run_database(dir / "whole.h5", record);
  expect_same_run(read_run_database(dir / "whole.h5"), read_run_database(dir / "run.h5"));
  // The same record again (the job's last commit after the winner's confirmation often is),
  // then with only its root fields changed.
  writer.commit(dir / "run.h5", record);
  expect_same_run(read_run_database(dir / "run.h5"), record);
  record.tune_yaml += "# edited\n";
  record.tune_file = "elsewhere/tune.yaml";
  record.r3_version = "9.9.9";
  writer.commit(dir / "run.h5", record);
  expect_same_run(read_run_database(dir / "run.h5"), record);
}

// HDF5 keeps a file's free space only while it is open, so each reopened image leaks the chunks
// its commit rewrote: the writer makes the image whole again once it passes twice its size when
// last made whole (plus 256 KiB). Over 600 commits of 4 candidates the file stays within that
// (largest 704 KiB against a fresh write's 192 KiB; 1280 KiB without the remakes).
TEST(RunDatabase, AWriterKeepsTheFileNearTheSizeOfAFreshWrite) {
  TempDir dir;
  const RunRecord full = sample_run(2400);
  RunRecord record = full;
  DatabaseWriter writer;
  std::uintmax_t largest = 0;
  for (std::size_t rows = 4; rows <= full.candidates.size(); rows += 4) {
    record.candidates.assign(full.candidates.begin(), full.candidates.begin() + rows);
    record.generations = static_cast<std::uint32_t>(rows / 4);
    writer.commit(dir / "run.h5", record);
    largest = std::max(largest, std::filesystem::file_size(dir / "run.h5"));
  }
  expect_same_run(read_run_database(dir / "run.h5"), record);
  write_run_database(dir / "whole.h5", record);
  const std::uintmax_t whole = std::filesystem::file_size(dir / "whole.h5");
  // The bound, plus the commit that passed it (the next one is made whole) and the core
  // driver's 64 KiB increments.
  EXPECT_LE(largest, 2 * whole + (std::uintmax_t{384} << 10))
      << "largest commit " << largest << " bytes, a fresh write " << whole;
}

// Each commit's in-memory file (image_file.hpp) is freed once the commit and HDF5 let go of it:
// none is left between commits, nor after a commit whose write failed (its directory gone).
TEST(RunDatabase, AWriterLeavesNoImageOfACommitBehind) {
  using r3::run::ImageFile;
  TempDir dir;
  ASSERT_EQ(ImageFile::images_alive(), 0u);
  DatabaseWriter writer;
  const RunRecord full = sample_run(40);
  RunRecord record = full;
  for (std::size_t rows = 4; rows <= full.candidates.size(); rows += 4) {
    record.candidates.assign(full.candidates.begin(), full.candidates.begin() + rows);
    writer.commit(dir / "run.h5", record);
    EXPECT_EQ(ImageFile::images_alive(), 0u) << "after the commit of " << rows << " rows";
  }
  EXPECT_THROW(writer.commit(dir / "gone" / "run.h5", full), r3::IoError);
  EXPECT_EQ(ImageFile::images_alive(), 0u) << "after a failed commit";
  writer.commit(dir / "run.h5", full);
  EXPECT_EQ(ImageFile::images_alive(), 0u);
  expect_same_run(read_run_database(dir / "run.h5"), full);
}

// A record that is not the last one grown (fewer rows, or a committed row changed) is written
// whole: the file never holds a mix of two records.
TEST(RunDatabase, AWriterWritesWholeARecordThatDidNotGrowFromTheLast) {
  TempDir dir;
  DatabaseWriter writer;
  writer.commit(dir / "run.h5", sample_run(40));
  const RunRecord fewer = sample_run(12);
  writer.commit(dir / "run.h5", fewer);
  expect_same_run(read_run_database(dir / "run.h5"), fewer);
  RunRecord changed = sample_run(30);
  changed.candidates[11].description = "changed after its commit";
  changed.candidates[11].seconds = 7;
  writer.commit(dir / "run.h5", changed);
  expect_same_run(read_run_database(dir / "run.h5"), changed);
  RunRecord other = sample_run(30);
  other.codes.clear();
  writer.commit(dir / "run.h5", other);
  expect_same_run(read_run_database(dir / "run.h5"), other);
}

// The sources count by hash: one replaced by another (the count unchanged), or dropped while
// others came, is not the last record grown; sources that came alone are added. (The sources
// changed are ones no candidate refers to.)
TEST(RunDatabase, AWriterFollowsTheSourcesByHash) {
  TempDir dir;
  DatabaseWriter writer;
  RunRecord record = sample_run(8);
  auto add = [&](const std::string& text) { record.sources[r3::hash_string(text)] = text; };
  add("a source no candidate refers to");
  writer.commit(dir / "run.h5", record);
  record.sources.erase(r3::hash_string("a source no candidate refers to"));
  add("another in its place");
  writer.commit(dir / "run.h5", record);
  expect_same_run(read_run_database(dir / "run.h5"), record);
  record.sources.erase(r3::hash_string("another in its place"));
  add("one more");
  add("and another");
  writer.commit(dir / "run.h5", record);
  expect_same_run(read_run_database(dir / "run.h5"), record);
  add("only a source came");
  writer.commit(dir / "run.h5", record);
  expect_same_run(read_run_database(dir / "run.h5"), record);
}

// A commit that failed (here its rename: a directory stands where the file would go) leaves the
// writer as if it had never committed: the next commit holds the whole record, not what came
// after the failed one on top of the one before.
TEST(RunDatabase, AWriterWritesWholeTheCommitAfterOneThatFailed) {
  TempDir dir;
  DatabaseWriter writer;
  writer.commit(dir / "run.h5", sample_run(4));
  std::filesystem::create_directories(dir / "taken" / "inside");
  EXPECT_THROW(writer.commit(dir / "taken", sample_run(20)), r3::IoError);
  const RunRecord more = sample_run(30);
  writer.commit(dir / "run.h5", more);
  expect_same_run(read_run_database(dir / "run.h5"), more);
}

TEST(RunDatabase, RefusesForeignNewerAndMissingFiles) {
  TempDir dir;
  std::ofstream(dir / "text.h5") << "not hdf5";
  EXPECT_THROW(read_run_database(dir / "text.h5"), r3::FormatError);
  EXPECT_THROW(read_run_database(dir / "missing.h5"), r3::IoError);
  write_run_database(dir / "run.h5", sample_run(2));
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
  // A run database that cannot be read is an error, not "some other file".
  try {
    read_if_run_database(dir / "run.h5");
    FAIL() << "a newer version was taken for another file or read";
  } catch (const r3::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
  }
}

TEST(DatabaseLock, ASecondHolderIsRefusedWithTheFirstNamed) {
  TempDir dir;
  auto first = std::make_unique<DatabaseLock>(dir / "run.h5");
  EXPECT_TRUE(first->taken_over().empty());
  try {
    DatabaseLock second(dir / "run.h5");
    FAIL() << "two locks on one run database";
  } catch (const r3::UsageError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("another job is using the run database"), std::string::npos) << what;
    EXPECT_NE(what.find("pid " + std::to_string(getpid())), std::string::npos) << what;
  }
  first.reset();
  EXPECT_FALSE(std::filesystem::exists(lock_path(dir / "run.h5"))) << "released but left behind";
  DatabaseLock again(dir / "run.h5");  // free once released
  EXPECT_TRUE(again.taken_over().empty());
}

TEST(DatabaseLock, TheLockOfADeadJobIsTakenOverAndNamed) {
  TempDir dir;
  std::ofstream(lock_path(dir / "run.h5")) << "host elsewhere pid 4194303 since 2026-01-01T00:00:00Z\n";
  DatabaseLock lock(dir / "run.h5");  // no flock is held on it: its job is gone
  EXPECT_NE(lock.taken_over().find("pid 4194303 on elsewhere"), std::string::npos)
      << lock.taken_over();
  std::ifstream in(lock_path(dir / "run.h5"));
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("pid " + std::to_string(getpid())), std::string::npos) << text;
}

// A full disk at a commit: a clear error naming the file and the cause, the last commit intact,
// no temporary left. (HDF5 writing to a full disk itself failed its close and crashed at exit;
// the database is now made in memory and written by r3.) Needs root to mount a small tmpfs.
TEST(RunDatabase, AFullDiskLeavesTheLastCommitIntact) {
  TempDir dir;
  if (::mount("tmpfs", dir.path().c_str(), "tmpfs", 0, "size=384k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno) << ")";
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount(path.c_str()); }
  } unmount{dir.path().string()};
  const RunRecord small = sample_run(4);
  write_run_database(dir / "run.h5", small);
  RunRecord large = sample_run(4);
  std::uint64_t state = 2026;
  for (int i = 0; i < 64; ++i) {  // 64 sources of 8 KiB that deflate cannot shrink: 512 KiB
    std::string text(8192, ' ');
    for (char& c : text) c = static_cast<char>(33 + (state = state * 6364136223846793005ull + 1) % 90);
    large.sources[r3::hash_string(text)] = text;
  }
  try {
    write_run_database(dir / "run.h5", large);
    FAIL() << "a database larger than the disk was written";
  } catch (const r3::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find((dir / "run.h5").string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_run_database(dir / "run.h5").sources, small.sources) << "the last commit was lost";
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().filename(), "run.h5") << "left behind: " << entry.path();

  // The job's writer: a commit that did not fit fails as above, and the next one, once there is
  // room, holds its whole record (not only what came after the commit that failed).
  DatabaseWriter writer;
  writer.commit(dir / "run.h5", small);
  EXPECT_THROW(writer.commit(dir / "run.h5", large), r3::IoError);
  expect_same_run(read_run_database(dir / "run.h5"), small);
  RunRecord next = sample_run(9);
  for (const auto& [hash, text] : large.sources)  // 8 of the large sources: they fit
    if (!small.sources.contains(hash) && next.sources.size() < small.sources.size() + 8)
      next.sources[hash] = text;
  writer.commit(dir / "run.h5", next);
  expect_same_run(read_run_database(dir / "run.h5"), next);
}

}  // namespace
