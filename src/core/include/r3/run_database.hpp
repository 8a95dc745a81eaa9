// The run database (run.h5) of a tuning job: the tune.yaml it ran with, every candidate with its
// outcome, every source once, and the search state to resume from. Written by rank 0 only, whole,
// after each generation: to a temporary file that is flushed to disk and renamed over the last
// one, so a kill at any moment leaves the previous generation's database intact.
// docs/run-database.md describes the layout.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "r3/hash.hpp"
#include "r3/outcome.hpp"

namespace r3::run {

inline constexpr const char* kRunFormat = "r3-run";
// 2 added configuration, run_seconds and /confirmations; 3 a hash on every dataset; 4 /codes
inline constexpr std::uint32_t kRunVersion = 4;

// What a candidate is to the search: the application's code (original; rebuilt: the same code
// through another compiler path), a new source, or a point of one level of a source.
enum class CandidateLevel { original, rebuilt, source, compiler, launch, parameters };
std::string_view to_string(CandidateLevel level);
std::optional<CandidateLevel> candidate_level_from_string(std::string_view text);
// The application's own code, as recorded or rebuilt: what every other candidate is compared with.
constexpr bool is_original(CandidateLevel level) {
  return level == CandidateLevel::original || level == CandidateLevel::rebuilt;
}

struct CandidateRecord {
  std::uint64_t id = 0;
  std::uint32_t generation = 0;
  std::int64_t parent = -1;  // the candidate whose source this one's came from; -1: none
  std::uint32_t kernel = 0;  // index in tune.yaml's kernels
  Hash128 source;            // its source text, in RunRecord::sources
  CandidateLevel level = CandidateLevel::original;
  std::string plan;          // the search's own encoding of the candidate (for resume)
  std::string description;   // the configuration for people ("opt=3 passes=[licm] TILE=16")
  Outcome outcome = Outcome::ok;
  std::string message;       // why, when not ok
  double seconds = 0;        // median time over the recorded launches (summed); 0 unless ok
  double min_seconds = 0;
  double max_seconds = 0;
  double compile_seconds = 0;
  double evaluation_seconds = 0;  // the whole evaluation, as its evaluator saw it
  std::int32_t registers = -1;
  std::int32_t spilled_bytes = -1;
  std::int32_t shared_bytes = -1;
  std::uint64_t code_bytes = 0;
  std::int32_t evaluator = -1;  // the rank that evaluated it
  // What was compiled and launched, as JSON: entry, defines, flags, passes, compiler, block
  // (replay::Variant without its source text), so results can be rebuilt from the database.
  std::string configuration;
  double run_seconds = 0;  // the run's wall time when the candidate's result was committed
  friend bool operator==(const CandidateRecord&, const CandidateRecord&) = default;
};

// One re-measurement of a candidate in the winner confirmation at the end of a session: the
// best candidates and the original, interleaved, with more repetitions, on several evaluators.
struct ConfirmationRecord {
  std::uint64_t candidate = 0;  // the candidate measured (the original's id too)
  std::uint32_t kernel = 0;
  std::uint32_t after_generation = 0;  // generations committed when it ran (one confirmation each)
  std::uint32_t round = 0;  // interleaving round: same round, same evaluator = neighbours
  std::int32_t evaluator = -1;
  std::uint32_t repeats = 0;
  Outcome outcome = Outcome::ok;
  std::string message;
  double seconds = 0;  // median over `repeats` runs, summed over the recorded launches
  double min_seconds = 0;
  double max_seconds = 0;
  friend bool operator==(const ConfirmationRecord&, const ConfirmationRecord&) = default;
};

// A candidate's compiled code as its evaluator loaded it (CUDA: the cubin), kept for the
// candidates the winner confirmation measured, so that `r3 apply` runs exactly what was
// confirmed without compiling it again (report::write_results stores the winner's beside its
// best.yaml: winner_code_file.hpp).
struct CodeRecord {
  std::uint64_t candidate = 0;
  std::uint32_t kernel = 0;
  std::string architecture;  // "sm_90"
  std::string toolkit;       // the CUDA toolkit that compiled it ("13.0")
  std::string function;      // the kernel's name in the image
  std::string image;         // its bytes
  friend bool operator==(const CodeRecord&, const CodeRecord&) = default;
};

struct RunRecord {
  std::string tune_yaml;          // the configuration's text
  std::string tune_file;          // where it was read from
  std::string r3_version;         // of the job that wrote the database last
  std::uint32_t generations = 0;  // committed
  double elapsed_seconds = 0;     // wall time of every session of the run together
  std::uint32_t sessions = 0;     // how often the job was started (1 + resumes)
  std::string search_state;       // the search's own encoding of what it needs to resume
  std::map<Hash128, std::string> sources;
  std::vector<CandidateRecord> candidates;  // in the order they were proposed
  std::vector<ConfirmationRecord> confirmations;
  std::vector<CodeRecord> codes;  // at most one per candidate
};

// Writes `record` to `file` atomically (temporary file, fsync, rename). Throws IoError.
void write_run_database(const std::filesystem::path& file, const RunRecord& record);

// Commits one run's record again and again (the tuning job, each generation), each commit as
// atomic as write_run_database's: the whole file written beside `file`, synced, renamed over
// it. The file is made from a database kept open in memory between commits, to which only what
// the record gained since the last commit is added: rows appended to the tables' columns (only
// their last chunks compressed again), new sources written, the attributes and the search state
// replaced. So a commit costs what was added, not what the run holds; written whole, run.h5
// cost rank 0 more at every commit as the history grew (2000 candidates: ~15 ms a commit).
// Between commits the record may only grow: rows appended, sources added, none committed
// changed or removed (the job's record does just that). A record with fewer rows than were
// committed, whose last committed row of a table changed, or that lacks a committed source
// (by hash, whatever the count), is written whole again; so is every record after a failed
// commit. Only the last committed row of each table is checked: a record that changes an
// earlier one breaks the rule unseen.
class DatabaseWriter {
 public:
  DatabaseWriter();
  ~DatabaseWriter();
  DatabaseWriter(DatabaseWriter&&) noexcept;
  DatabaseWriter& operator=(DatabaseWriter&&) noexcept;

  // Throws IoError naming the file; the file then holds the last commit, as it was.
  void commit(const std::filesystem::path& file, const RunRecord& record);

 private:
  struct Committed;
  std::unique_ptr<Committed> committed_;
};
// Reads a run database; throws FormatError for a file that is not one, a newer version, or a
// damaged one, naming the file.
RunRecord read_run_database(const std::filesystem::path& file);
// The run database in `file` when it is one (an HDF5 file whose root says format = "r3-run"),
// nullopt when it is not; throws as read_run_database for a damaged or newer one, and
// FormatError when reading it crashes or loops HDF5 (a damaged file, whatever it holds). One
// rehearsal answers both questions (each is a fork and a read of the file).
std::optional<RunRecord> read_if_run_database(const std::filesystem::path& file);

}  // namespace r3::run
