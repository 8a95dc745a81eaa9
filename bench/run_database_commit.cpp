// bench/run_database_commit: what committing run.h5 costs rank 0 as a run's history grows, written
// whole (write_run_database) against the job's DatabaseWriter, which adds only what came since
// its last commit. A record grows by --per-commit candidates at a time up to --candidates (or
// the candidates of a real run, --from run.h5), and is committed both ways at every step, in
// turn (which one goes first alternates), each to its own file in a temporary directory. Per
// window of the history: the mean wall and CPU milliseconds per commit, each way, and their
// ratio. The wall time includes the fsync of the file and its directory, which depends on the
// disk; the CPU time is rank 0's own work. Both files are read back at the end and compared.
//
// Usage: run_database_commit [--candidates N] [--per-commit K] [--from RUN.H5] [--dir DIR]
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "r3/error.hpp"
#include "r3/hash.hpp"
#include "r3/run_database.hpp"

namespace {

using namespace r3::run;

double cpu_now() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double wall_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A run like the host demo's (tune.yaml with the compiler level): its fields as long as a
// real run.h5's at 2000 candidates (plan ~80 bytes, description ~105, configuration ~265), their
// texts varying from candidate to candidate as the search's do.
RunRecord synthetic_run(std::size_t candidates) {
  static const char* const kPasses[] = {"licm",
                                        "gvn",
                                        "sroa",
                                        "loop-unroll",
                                        "sccp",
                                        "instcombine",
                                        "jump-threading",
                                        "loop-vectorize",
                                        "slp-vectorizer",
                                        "early-cse",
                                        "dse",
                                        "simplifycfg"};
  RunRecord r;
  r.tune_yaml = "capture: demo.h5\nkernels:\n  - name: stencil2d\n    source: stencil.cpp\n";
  r.tune_file = "/tmp/tune.yaml";
  r.r3_version = "bench";
  r.sessions = 1;
  std::vector<r3::Hash128> sources;
  for (int s = 0; s < 9; ++s) {
    std::string text = "extern \"C\" void stencil2d(const float* in, float* out, int n) {\n";
    for (int line = 0; line < 30; ++line)
      text += "  // variant " + std::to_string(s) + " line " + std::to_string(line) + "\n";
    text += "}\n";
    sources.push_back(r3::hash_string(text));
    r.sources[sources.back()] = text;
  }
  std::uint64_t state = 2026;
  auto next = [&state](std::uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  };
  for (std::size_t i = 0; i < candidates; ++i) {
    CandidateRecord c;
    c.id = i;
    c.generation = static_cast<std::uint32_t>(i / 4);
    c.parent = i == 0 ? -1 : static_cast<std::int64_t>(next(i));
    c.kernel = 0;
    c.source = sources[next(sources.size())];
    c.level = i == 0 ? CandidateLevel::original : CandidateLevel::compiler;
    std::string passes;
    for (std::uint64_t p = 0, n = 1 + next(5); p < n; ++p)
      passes += (p ? "," : "") + std::string(kPasses[next(std::size(kPasses))]);
    const std::string opt = std::to_string(next(4)), unroll = std::to_string(1 << next(4));
    c.plan = R"({"levels":{"compiler":[[)" + opt + "," + std::to_string(next(2)) + "],[" +
             std::to_string(next(12)) + "," + std::to_string(next(12)) + R"(]]},"p":[)" + unroll +
             "]}";
    c.description = "compiler: opt=" + opt + " fast_math=" + (next(2) ? "on" : "off") +
                    " ftz=off fmad=on passes=[" + passes + "] R3_UNROLL_0=" + unroll;
    c.outcome = next(10) == 0 ? r3::Outcome::compile_error : r3::Outcome::ok;
    c.message = c.outcome == r3::Outcome::ok ? "" : "error: unknown pass name '" + passes + "'";
    c.seconds = 1e-3 * (0.5 + static_cast<double>(next(1000)) / 1000);
    c.min_seconds = 0.97 * c.seconds;
    c.max_seconds = 1.05 * c.seconds;
    c.compile_seconds = 0.05 + static_cast<double>(next(100)) / 1000;
    c.evaluation_seconds = c.compile_seconds + 10 * c.seconds;
    c.code_bytes = 4000 + next(2000);
    c.evaluator = static_cast<std::int32_t>(1 + next(2));
    c.configuration = R"({"compiler":{"opt":)" + opt + R"(,"fast_math":false,"ftz":false,)" +
                      R"("fmad":true,"passes":")" + passes + R"(","flags":[]},"parameters":)" +
                      R"({"R3_UNROLL_0":)" + unroll + R"(},"launch":null,"source":")" +
                      c.source.hex() + R"("})";
    c.run_seconds = 0.9 * static_cast<double>(c.generation + 1);
    r.candidates.push_back(std::move(c));
  }
  return r;
}

int usage(int code) {
  std::fprintf(code == 0 ? stdout : stderr,
               "usage: run_database_commit [options]\n"
               "  --candidates N   history to grow to (default 2000; with --from, at most\n"
               "                   the run's)\n"
               "  --per-commit K   candidates added between commits (default 4, the host\n"
               "                   demo's generation)\n"
               "  --from RUN.H5    grow the candidates of this run database instead of\n"
               "                   synthetic ones (its sources, confirmations and codes\n"
               "                   go in with the first commit)\n"
               "  --dir DIR        where to write the two files (default: a new directory\n"
               "                   under the system's temporary one, removed at the end)\n");
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t candidates = 2000, per_commit = 4;
  std::string from, dir;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) std::exit(usage(2));
      return argv[++i];
    };
    if (a == "--candidates")
      candidates = std::strtoul(value().c_str(), nullptr, 10);
    else if (a == "--per-commit")
      per_commit = std::strtoul(value().c_str(), nullptr, 10);
    else if (a == "--from")
      from = value();
    else if (a == "--dir")
      dir = value();
    else if (a == "--help" || a == "-h")
      return usage(0);
    else
      return usage(2);
  }
  if (candidates == 0 || per_commit == 0) return usage(2);
  try {
    RunRecord full = from.empty() ? synthetic_run(candidates) : read_run_database(from);
    if (full.candidates.size() > candidates) full.candidates.resize(candidates);
    candidates = full.candidates.size();
    const bool own_dir = dir.empty();
    const std::filesystem::path where =
        own_dir ? std::filesystem::temp_directory_path() /
                      ("r3-run-database-commit-" + std::to_string(::getpid()))
                : std::filesystem::path(dir);
    std::filesystem::create_directories(where);

    // Windows of the history, by candidates committed.
    const std::vector<double> edges = {0, 0.0625, 0.125, 0.25, 0.5, 0.75, 1.0};
    struct Window {
      std::size_t commits = 0;
      double wall[2] = {0, 0}, cpu[2] = {0, 0};
    };
    std::vector<Window> windows(edges.size() - 1);
    RunRecord record = full;
    DatabaseWriter writer;
    std::size_t step = 0;
    for (std::size_t rows = std::min(per_commit, candidates);; ++step) {
      record.candidates.assign(full.candidates.begin(),
                               full.candidates.begin() + static_cast<long>(rows));
      record.generations = static_cast<std::uint32_t>(step + 1);
      record.elapsed_seconds = static_cast<double>(step);
      record.search_state = R"({"rng":")" + std::to_string(step * 2654435761u) + R"(","next_id":)" +
                            std::to_string(rows) + "}";
      std::size_t w = 0;
      while (w + 1 < windows.size() &&
             static_cast<double>(rows) > edges[w + 1] * static_cast<double>(candidates))
        ++w;
      Window& window = windows[w];
      ++window.commits;
      for (int turn = 0; turn < 2; ++turn) {
        const int way = (turn + static_cast<int>(step)) % 2;  // 0: whole, 1: the writer
        const double wall = wall_now(), cpu = cpu_now();
        if (way == 0)
          write_run_database(where / "whole.h5", record);
        else
          writer.commit(where / "writer.h5", record);
        window.wall[way] += wall_now() - wall;
        window.cpu[way] += cpu_now() - cpu;
      }
      if (rows == candidates) break;
      rows = std::min(candidates, rows + per_commit);
    }

    std::printf(
        "# ms per commit of run.h5 as the history grows by %zu candidates a commit "
        "(%s): written whole, and by the\n# job's DatabaseWriter (adding what came "
        "since the last commit); wall includes fsync; ratio = whole / writer\n",
        per_commit, from.empty() ? "synthetic run" : from.c_str());
    std::printf("%-13s %7s  %10s %10s %6s  %10s %10s %6s\n", "candidates", "commits", "whole wall",
                "writer", "ratio", "whole CPU", "writer", "ratio");
    for (std::size_t w = 0; w < windows.size(); ++w) {
      const Window& window = windows[w];
      if (window.commits == 0) continue;
      const double n = static_cast<double>(window.commits);
      char range[32];
      std::snprintf(range, sizeof range, "%zu-%zu",
                    static_cast<std::size_t>(edges[w] * static_cast<double>(candidates)),
                    static_cast<std::size_t>(edges[w + 1] * static_cast<double>(candidates)));
      std::printf("%-13s %7zu  %10.2f %10.2f %6.2f  %10.2f %10.2f %6.2f\n", range, window.commits,
                  1e3 * window.wall[0] / n, 1e3 * window.wall[1] / n,
                  window.wall[0] / window.wall[1], 1e3 * window.cpu[0] / n, 1e3 * window.cpu[1] / n,
                  window.cpu[0] / window.cpu[1]);
    }
    const RunRecord whole = read_run_database(where / "whole.h5");
    const RunRecord grown = read_run_database(where / "writer.h5");
    const bool same = whole.candidates == grown.candidates && whole.sources == grown.sources &&
                      whole.confirmations == grown.confirmations && whole.codes == grown.codes &&
                      whole.search_state == grown.search_state &&
                      grown.candidates.size() == candidates;
    std::printf("files read back: %s (%zu candidates); sizes %ju (whole) and %ju (writer) bytes\n",
                same ? "the same" : "DIFFERENT", grown.candidates.size(),
                static_cast<std::uintmax_t>(std::filesystem::file_size(where / "whole.h5")),
                static_cast<std::uintmax_t>(std::filesystem::file_size(where / "writer.h5")));
    if (own_dir) std::filesystem::remove_all(where);
    return same ? 0 : 1;
  } catch (const r3::Error& e) {
    std::fprintf(stderr, "run_database_commit: %s\n", e.what());
    return 1;
  }
}
