// The command-line tools as a user runs them: exit status, stdout, stderr.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <hdf5.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "r3/config/tune_config.hpp"
#include "r3/version.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using r3::test::contains;
using r3::test::ProcessResult;
using r3::test::run_process;
using r3::test::TempDir;

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    capture_ = dir_ / "demo.h5";
    // 512 x 512 floats (1 MiB) per buffer, 2 steps: the sizes the checks below expect.
    ProcessResult made =
        r3::test::record_demo(R3_TEST_R3, R3_TEST_EXAMPLE_STENCIL, capture_.string(), 512, 2);
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }
  ProcessResult r3(std::vector<std::string> args) {
    args.insert(args.begin(), R3_TEST_R3);
    return run_process(args);
  }
  ProcessResult r3_mpi(std::vector<std::string> args) {
    args.insert(args.begin(), R3_TEST_R3_MPI);
    return run_process(args);
  }
  // A tune.yaml for the demo capture, with `extra` appended.
  fs::path write_tune(const std::string& extra = "") {
    fs::copy_file(fs::path(R3_TEST_SOURCE_DIR) / "examples/demo/stencil.cpp", dir_ / "stencil.cpp",
                  fs::copy_options::overwrite_existing);
    std::ofstream(dir_ / "tune.yaml") << "capture: demo.h5\nkernels:\n  - name: stencil2d\n"
                                         "    source: stencil.cpp\n"
                                      << extra;
    return dir_ / "tune.yaml";
  }
  TempDir dir_;
  fs::path capture_;
};

TEST_F(Cli, InspectPrintsDeviceKernelsLaunchesAndBytes) {
  ProcessResult result = r3({"inspect", capture_.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string& out = result.out;
  EXPECT_TRUE(contains(out, "format    r3-capture version 1")) << out;
  EXPECT_TRUE(contains(out, "device    host: ")) << out;
  EXPECT_TRUE(contains(out, "contents  1 kernel, 2 launches, 10 regions")) << out;
  // 6 regions of 1 MiB (in and out before each step, out after it) and 4 of the 8-byte change;
  // 4 distinct grids: the second step reads what the first wrote.
  EXPECT_TRUE(contains(out, "6.00 MiB referenced")) << out;
  EXPECT_TRUE(contains(out, "4.00 MiB distinct")) << out;
  EXPECT_TRUE(contains(out, "kernel #0  stencil2d")) << out;
  EXPECT_TRUE(contains(out, "images     source (")) << out;
  EXPECT_TRUE(contains(out, "launch 1  #1  grid 1x1x1")) << out;
  EXPECT_TRUE(contains(out, "prologue 3 regions, 2.00 MiB")) << out;
  EXPECT_FALSE(contains(out, "warning")) << out;
}

TEST_F(Cli, InspectListsRegionsAndVerifiesContents) {
  ProcessResult result = r3({"inspect", "--regions", "--verify", capture_.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.out, "        in  0x")) << result.out;
  EXPECT_TRUE(contains(result.out, "1.00 MiB  f32")) << result.out;
  EXPECT_TRUE(contains(result.out, "verified  every stored content matches its hash"))
      << result.out;
}

TEST_F(Cli, InspectRefusesATruncatedCopy) {
  fs::path copy = dir_ / "truncated.h5";
  fs::copy_file(capture_, copy);
  fs::resize_file(copy, fs::file_size(capture_) / 2);
  ProcessResult result = r3({"inspect", copy.string()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(result.out.empty()) << result.out;
  EXPECT_TRUE(
      contains(result.err, "r3: error: " + copy.string() + ": damaged or truncated HDF5 file"))
      << result.err;
}

TEST_F(Cli, InspectRefusesAForeignHdf5File) {
  fs::path foreign = dir_ / "foreign.h5";
  hid_t file = H5Fcreate(foreign.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t group = H5Gcreate2(file, "simulation", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose(group);
  H5Fclose(file);
  ProcessResult result = r3({"inspect", foreign.string()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(contains(result.err, foreign.string() + ": not an r3 capture")) << result.err;
}

TEST_F(Cli, InspectRefusesANonHdf5FileAndAMissingOne) {
  std::ofstream(dir_ / "notes.txt") << "not a capture\n";
  ProcessResult text = r3({"inspect", (dir_ / "notes.txt").string()});
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_TRUE(contains(text.err, "notes.txt: not an HDF5 file")) << text.err;
  ProcessResult missing = r3({"inspect", (dir_ / "absent.h5").string()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(contains(missing.err, "absent.h5: open: the capture does not exist")) << missing.err;
}

TEST_F(Cli, VersionHelpAndUsageErrors) {
  ProcessResult version = r3({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_TRUE(contains(version.out, "r3 0.1.0")) << version.out;
  EXPECT_TRUE(contains(version.out, "HDF5: yes")) << version.out;
  for (const char* command : {"record", "replay", "inspect", "report"}) {
    ProcessResult help = r3({command, "--help"});
    EXPECT_EQ(help.exit_code, 0) << command;
    EXPECT_TRUE(contains(help.out, std::string("Usage: r3 ") + command)) << help.out;
  }
  EXPECT_EQ(r3({}).exit_code, 2);
  EXPECT_EQ(r3({"bogus"}).exit_code, 2);
  EXPECT_EQ(r3({"inspect"}).exit_code, 2);
  EXPECT_EQ(r3({"record", "--capture", "some", "--", "./app"}).exit_code, 2);
}

// The options a --help prints ("-k,--kernel TEXT" -> -k, --kernel), and those one section of
// docs/commands.md lists in its table (`-k`, `--kernel` in the first column).
std::set<std::string> help_options(const std::string& help) {
  std::set<std::string> out;
  std::istringstream lines(help.substr(help.find("Options:")));
  std::regex option(R"(^  (-[-\w]+(,-[-\w]+)*))");
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("Subcommands:", 0) == 0) break;
    std::smatch m;
    if (!std::regex_search(line, m, option)) continue;
    std::istringstream names(m[1].str());
    for (std::string name; std::getline(names, name, ',');) out.insert(name);
  }
  return out;
}

std::set<std::string> documented_options(const std::string& doc, const std::string& heading) {
  std::size_t start = doc.find("\n## " + heading + "\n");
  EXPECT_NE(start, std::string::npos) << "docs/commands.md has no section '## " << heading << "'";
  if (start == std::string::npos) return {};
  std::size_t end = doc.find("\n## ", start + 1);
  std::istringstream lines(doc.substr(start, end == std::string::npos ? end : end - start));
  std::set<std::string> out;
  std::regex option("`(-[-\\w]+)`");
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| `-", 0) != 0) continue;
    std::string first_column = line.substr(0, line.find('|', 1));
    for (std::sregex_iterator it(first_column.begin(), first_column.end(), option), last;
         it != last; ++it)
      out.insert((*it)[1].str());
  }
  return out;
}

TEST_F(Cli, HelpMatchesTheCommandReference) {
  std::ifstream in(std::string(R3_TEST_SOURCE_DIR) + "/docs/commands.md");
  std::stringstream doc;
  doc << in.rdbuf();
  struct Command {
    std::string heading;
    std::vector<std::string> argv;
  };
  for (const Command& c : std::vector<Command>{{"r3", {R3_TEST_R3, "--help"}},
                                               {"r3 record", {R3_TEST_R3, "record", "--help"}},
                                               {"r3 apply", {R3_TEST_R3, "apply", "--help"}},
                                               {"r3 replay", {R3_TEST_R3, "replay", "--help"}},
                                               {"r3 inspect", {R3_TEST_R3, "inspect", "--help"}},
                                               {"r3 report", {R3_TEST_R3, "report", "--help"}},
                                               {"r3-mpi", {R3_TEST_R3_MPI, "--help"}}}) {
    ProcessResult help = run_process(c.argv);
    ASSERT_EQ(help.exit_code, 0) << c.heading;
    std::set<std::string> printed = help_options(help.out);
    // Every subcommand's -h/--help is documented once, in the r3 section.
    if (c.heading.rfind("r3 ", 0) == 0) printed.erase("-h"), printed.erase("--help");
    EXPECT_FALSE(printed.empty()) << help.out;
    EXPECT_EQ(documented_options(doc.str(), c.heading), printed)
        << "docs/commands.md, section '" << c.heading << "', and --help differ:\n"
        << help.out;
  }
}

TEST_F(Cli, AMissingKokkosConnectorIsNamedWithWhereItWasLookedFor) {
  // Also what a build without Kokkos says (there the connector is not built).
  const std::string nowhere = (dir_ / "nowhere" / "libr3kokkos.so").string();
  for (std::vector<std::string> args :
       {std::vector<std::string>{"record", "--kokkos", "--", "./app"},
        std::vector<std::string>{"apply", R3_TEST_SOURCE_DIR "/examples/demo/tune.yaml", "--",
                                 "./app"}}) {
    std::vector<std::string> argv = {R3_TEST_R3};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessResult r =
        run_process(argv, std::chrono::seconds(60), {"R3_KOKKOS_CONNECTOR=" + nowhere});
    EXPECT_EQ(r.exit_code, 3) << args[0] << ": " << r.err;
    EXPECT_TRUE(contains(
        r.err,
        "the Kokkos Tools connector libr3kokkos.so was not found (looked at " + nowhere + ")"))
        << r.err;
  }
}

TEST_F(Cli, DryRunPrintsTheResolvedConfigurationAsValidYaml) {
  if (!r3::build_has_llvm()) GTEST_SKIP() << "the demo's host backend needs LLVM in this build";
  fs::path tune = write_tune("timing:\n  repeats: 7\n");
  ProcessResult result = r3_mpi({tune.string(), "--dry-run"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.out, "# r3-mpi --dry-run: " + tune.string() + " is valid"))
      << result.out;
  EXPECT_TRUE(contains(result.out, "# backend host, 1 kernel(s), 2 recorded launch(es)"))
      << result.out;
  EXPECT_TRUE(contains(result.out, "repeats: 7")) << result.out;
  EXPECT_TRUE(contains(result.out, "capture: " + capture_.string())) << result.out;
  r3::config::TuneConfig resolved = r3::config::parse_tune_config(result.out, tune);
  EXPECT_EQ(resolved.timing.repeats, 7u);
  EXPECT_EQ(resolved.kernels.at(0).source, dir_ / "stencil.cpp");
}

TEST_F(Cli, KeysListsEveryDeclaredKeyWithoutATuneFile) {
  ProcessResult result = r3_mpi({"--keys"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::size_t rows = 0;
  for (const r3::config::KeyDescription& key : r3::config::describe_keys()) {
    EXPECT_TRUE(contains(result.out, "| `" + key.key + "` | " + key.type + " | " +
                                         key.default_value + " | " + key.doc + " |"))
        << key.key;
    ++rows;
  }
  EXPECT_GT(rows, 60u);
  EXPECT_TRUE(contains(result.out, "| `timing.repeats` | integer 1..1048576 | `10` |"))
      << result.out;
}

TEST_F(Cli, DryRunErrorsNameFileLineAndKey) {
  fs::path tune = write_tune("timing:\n  repeets: 7\n");
  ProcessResult result = r3_mpi({tune.string(), "--dry-run"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(result.out.empty()) << result.out;
  EXPECT_TRUE(contains(result.err, tune.string() +
                                       ":6:3: timing.repeets: unknown key 'repeets' (did you mean "
                                       "'repeats'?)"))
      << result.err;
}

TEST_F(Cli, DryRunRefusesAnUnknownKernelAndAMissingCapture) {
  write_tune();
  std::ofstream(dir_ / "tune.yaml") << "capture: demo.h5\nkernels:\n  - name: saxpy\n";
  ProcessResult unknown = r3_mpi({(dir_ / "tune.yaml").string(), "--dry-run"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_TRUE(contains(unknown.err,
                       "tune.yaml:3:11: kernels[0].name: kernel 'saxpy' is not in "
                       "this capture; it holds: stencil2d"))
      << unknown.err;

  std::ofstream(dir_ / "tune.yaml") << "capture: elsewhere.h5\nkernels: [stencil2d]\n";
  ProcessResult missing = r3_mpi({(dir_ / "tune.yaml").string(), "--dry-run"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(contains(missing.err, "tune.yaml:1:10: capture: " + (dir_ / "elsewhere.h5").string() +
                                        ": open: the capture does not exist"))
      << missing.err;
}

// What is not a regular file is refused at once, saying what it is (a FIFO would block the
// reader for good, /dev/zero never ends); values that cannot take effect are errors.
TEST_F(Cli, DryRunRefusesWhatIsNotARegularFileAndValuesThatCannotTakeEffect) {
  ASSERT_EQ(mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  auto dry_run = [&](const std::string& tune) {
    ProcessResult r = run_process({R3_TEST_R3_MPI, tune, "--dry-run"}, std::chrono::seconds(20));
    EXPECT_FALSE(r.timed_out) << tune;
    EXPECT_EQ(r.exit_code, 1) << tune;
    return r.err;
  };
  EXPECT_TRUE(contains(dry_run((dir_ / "fifo").string()), "tune file is a FIFO, not a regular file"));
  EXPECT_TRUE(contains(dry_run("/dev/zero"), "tune file is a character device, not a regular file"));
  EXPECT_TRUE(contains(dry_run(dir_.path().string()), "tune file is a directory, not a file"));
  ProcessResult inspect = run_process({R3_TEST_R3, "inspect", (dir_ / "fifo").string()}, std::chrono::seconds(20));
  EXPECT_TRUE(contains(inspect.err, "the capture is a FIFO, not a regular file")) << inspect.err;

  const std::vector<std::pair<std::string, std::string>> cases = {
      {"capture: fifo\nkernels: [stencil2d]\n", "capture: " + (dir_ / "fifo").string() + ": open: the capture is a FIFO"},
      {"capture: demo.h5\nkernels:\n  - name: stencil2d\n    source: /dev/zero\n",
       "kernels[0].source: source file /dev/zero is a character device, not a regular file"},
      {"capture: demo.h5\nkernels:\n  - name: stencil2d\n    source: /tmp\n",
       "kernels[0].source: source file /tmp is a directory, not a file"},
      {"capture: demo.h5\nkernels: [stencil2d]\n---\nbudget:\n  evaluations: 5\n",
       "tune.yaml:4: holds 2 YAML documents"},
      {"capture: demo.h5\nkernels: [stencil2d]\nsearch:\n  levels:\n    compiler:\n      passes:\n"
       "        baseline: \"default<O9>\"\n",
       "search.levels.compiler.passes.baseline: 'default<O9>' is not a pass pipeline"},
      {"capture: demo.h5\nkernels:\n  - name: stencil2d\n    passes: \"default<O1>\"\n",
       "kernels[0].passes: cannot take effect"},
  };
  for (const auto& [yaml, expected] : cases) {
    std::ofstream(dir_ / "tune.yaml", std::ios::trunc) << yaml;
    std::string err = dry_run((dir_ / "tune.yaml").string());
    EXPECT_TRUE(contains(err, expected)) << yaml << "\n" << err;
  }
  std::ofstream(dir_ / "tune.yaml", std::ios::trunc)
      << "capture: demo.h5\nkernels: [stencil2d]\noutput:\n  run_database: " << dir_.path().string() << "\n";
  ProcessResult run = r3_mpi({(dir_ / "tune.yaml").string()});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(contains(run.err, "output.run_database: " + dir_.path().string() +
                                    " is not a regular file but a directory")) << run.err;
}

TEST_F(Cli, OneProcessTunesAloneAndRefusesToOverwriteARun) {
  // Without mpirun, r3-mpi is one process that searches and evaluates.
  if (!r3::build_has_llvm()) GTEST_SKIP() << "the demo's host backend needs LLVM in this build";
  // A short confirmation: the default's 50 timed runs per launch take a minute on 2 cores.
  fs::path tune = write_tune(
      "search: {batch_size: 3}\ntiming: {confirm_repeats: 5}\nbudget: {evaluations: 6}\n");
  ProcessResult result = r3_mpi({tune.string()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.err, "1 process (searcher and evaluator)")) << result.err;
  EXPECT_TRUE(contains(result.err, "finished after 2 generation(s)")) << result.err;
  EXPECT_TRUE(fs::exists(dir_ / "r3-results" / "run.h5"));
  ProcessResult again = r3_mpi({tune.string()});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_TRUE(contains(again.err, "--resume")) << again.err;
  ProcessResult resumed = r3_mpi({tune.string(), "--resume"});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_TRUE(contains(resumed.err, "budget.evaluations (6) reached")) << resumed.err;
  EXPECT_EQ(r3_mpi({}).exit_code, 2);
}

}  // namespace
