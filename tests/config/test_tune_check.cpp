// tune.yaml checked against its capture: kernels, launches, source files, backend.
#include <gtest/gtest.h>

#include <fstream>

#include "r3/config/tune_config.hpp"
#include "r3/error.hpp"
#include "r3/version.hpp"
#include "support/random_capture.hpp"
#include "support/temp_dir.hpp"

namespace {

using namespace r3::config;
using r3::test::TempDir;

class TuneCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    expected_ = r3::test::random_capture(3, r3::test::CaptureShape{2, 2, 1});
    expected_.info.device.backend = "host";
    r3::test::write_capture(dir_ / "c.h5", expected_);
    std::ofstream(dir_ / "kernel.cpp") << "void kernel0(float*, const float*, int) {}\n";
  }

  // Parses `yaml` as dir/tune.yaml and checks it; returns the error message, "" if accepted.
  std::string check(const std::string& yaml, int* line = nullptr) {
    TuneConfig config = parse_tune_config(yaml, dir_ / "tune.yaml");
    auto capture = r3::capture::CaptureReader::open(config.capture);
    try {
      check_against_capture(config, capture);
      return "";
    } catch (const r3::ConfigError& e) {
      if (line != nullptr) *line = e.context().line;
      EXPECT_EQ(e.context().file, (dir_ / "tune.yaml").string());
      return e.what();
    }
  }

  TempDir dir_;
  r3::test::ExpectedCapture expected_;
};

TEST_F(TuneCheck, AcceptsKernelsByAnyName) {
  if (!r3::build_has_llvm()) GTEST_SKIP() << "the host backend needs LLVM in this build";
  EXPECT_EQ(check("capture: c.h5\nkernels:\n  - name: kernel0\n    source: kernel.cpp\n"
                  "  - name: _Z6kernel1PfPKfi\n    launches: [1]\n"),
            "");
  TuneConfig config = parse_tune_config("capture: c.h5\nkernels: ['#1']\n", dir_ / "tune.yaml");
  EXPECT_EQ(check_against_capture(config, r3::capture::CaptureReader::open(config.capture)),
            Backend::host);
}

TEST_F(TuneCheck, UnknownKernelPointsAtItsLineAndListsTheCapture) {
  int line = 0;
  std::string message =
      check("capture: c.h5\nkernels:\n  - name: kernel0\n  - name: saxpy\n", &line);
  EXPECT_EQ(line, 4);
  EXPECT_NE(message.find("kernels[1].name: kernel 'saxpy' is not in this capture"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("_Z6kernel0PfPKfi"), std::string::npos) << message;
}

TEST_F(TuneCheck, LaunchThatWasNotRecorded) {
  int line = 0;
  std::string message =
      check("capture: c.h5\nkernels:\n  - name: kernel0\n    launches: [0, 5]\n", &line);
  EXPECT_EQ(line, 4);
  EXPECT_NE(message.find("launch 5 of kernel 'kernel0' was not recorded (it has 2)"),
            std::string::npos)
      << message;
}

TEST_F(TuneCheck, MissingSourceFile) {
  std::string message =
      check("capture: c.h5\nkernels:\n  - name: kernel0\n    source: nowhere.cpp\n");
  EXPECT_NE(message.find("source file " + (dir_ / "nowhere.cpp").string() + " does not exist"),
            std::string::npos)
      << message;
}

TEST_F(TuneCheck, BackendThatCannotReplayTheCapture) {
  int line = 0;
  std::string message = check("capture: c.h5\nbackend: cuda\nkernels: [kernel0]\n", &line);
  EXPECT_EQ(line, 2);
  EXPECT_NE(
      message.find("backend 'cuda' cannot replay this capture, which was recorded with 'host'"),
      std::string::npos)
      << message;
}

TEST_F(TuneCheck, CaptureFromAnUnknownBackend) {
  expected_.info.device.backend = "opencl";
  r3::test::write_capture(dir_ / "c.h5", expected_);
  std::string message = check("capture: c.h5\nkernels: [kernel0]\n");
  EXPECT_NE(message.find("recorded with backend 'opencl'"), std::string::npos) << message;
}

}  // namespace
