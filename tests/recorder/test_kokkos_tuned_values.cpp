// The tuned values of an r3 result as the Kokkos connector reads and matches them.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>

#include "tuned_values.hpp"

namespace {

using r3::kokkos::TunedValues;
using r3::kokkos::TunedValuesError;
namespace fs = std::filesystem;

const char* kTwoKernels = R"(# as r3 report writes it
capture: "heat.h5"
backend: cuda
kernels:
  - name: "heat::step"
    block: [32, 4, 1]
    defines: {"tile_size_1": "8", "UNROLL": "2"}
  - name: "heat::residual"
    defines: {"chunk_size": "256", "UNROLL": "4"}
timing:
  warmup: 2
)";

TEST(KokkosTunedValues, KokkosTunerNamesCarryTheKernelLabel) {
  TunedValues t = TunedValues::parse(kTwoKernels, "best.yaml");
  ASSERT_EQ(t.kernels().size(), 2u);
  auto x = t.find("heat::step_tile_size_0", "");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->value, "32");
  EXPECT_EQ(x->kernel->label, "heat::step");
  // The explicit define wins over the block's y.
  EXPECT_EQ(t.find("heat::step_tile_size_1", "")->value, "8");
  EXPECT_EQ(t.find("heat::step_team_size", "")->value, "4");
  EXPECT_EQ(t.find("heat::step_vector_length", "")->value, "32");
  EXPECT_FALSE(t.find("heat::step_tile_size_3", ""));
  EXPECT_FALSE(t.find("heat::other_team_size", ""));
}

TEST(KokkosTunedValues, OwnVariablesAreMatchedInTheKernelTheContextNames) {
  TunedValues t = TunedValues::parse(kTwoKernels, "best.yaml");
  EXPECT_EQ(t.find("UNROLL", "heat::step")->value, "2");
  EXPECT_EQ(t.find("UNROLL", "heat::residual")->value, "4");
  EXPECT_EQ(t.find("unroll", "heat::residual")->value, "4") << "names match ignoring case";
  // Two kernels have UNROLL: without a context naming one, Kokkos' default stays.
  EXPECT_FALSE(t.find("UNROLL", ""));
  EXPECT_FALSE(t.find("UNROLL", "a region of no tuned kernel"));
  // Only heat::residual has chunk_size; a context naming heat::step does not borrow it.
  EXPECT_EQ(t.find("chunk_size", "")->value, "256");
  EXPECT_FALSE(t.find("chunk_size", "heat::step"));
}

TEST(KokkosTunedValues, TheLongestMatchingLabelWins) {
  TunedValues t = TunedValues::parse(R"(kernels:
  - name: "a"
    defines: {"b_team_size": "1"}
  - name: "a_b"
    block: [64, 2, 1]
)",
                                     "best.yaml");
  auto found = t.find("a_b_team_size", "");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->kernel->label, "a_b");
  EXPECT_EQ(found->value, "2");
}

TEST(KokkosTunedValues, DamagedResultsAreRefusedWithFileAndKey) {
  auto message = [](const char* yaml) {
    try {
      TunedValues::parse(yaml, "r/best.yaml");
    } catch (const TunedValuesError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(message("capture: x\n").find("r/best.yaml: no 'kernels' list"), std::string::npos);
  EXPECT_NE(message("kernels: [\n").find("r/best.yaml:"), std::string::npos);
  EXPECT_NE(message("kernels:\n  - name: k\n    block: [32, 0, 1]\n")
                .find("r/best.yaml:3:17: kernels[].block of 'k': expected positive integers"),
            std::string::npos)
      << message("kernels:\n  - name: k\n    block: [32, 0, 1]\n");
  EXPECT_NE(message("kernels:\n  - name: k\n    block: [32, 1]\n").find("expected [x, y, z]"),
            std::string::npos);
  EXPECT_NE(message("kernels:\n  - name: k\n    defines: [A]\n").find("kernels[].defines of 'k'"),
            std::string::npos);
  EXPECT_NE(message("kernels:\n  - block: [1, 1, 1]\n").find("every kernel needs a name"),
            std::string::npos);
}

TEST(KokkosTunedValues, AResultsDirectoryGivesEveryKernelOnce) {
  fs::path dir = fs::temp_directory_path() / ("r3-kokkos-values-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "step");
  fs::create_directories(dir / "residual");
  fs::create_directories(dir / "no-result");
  std::ofstream(dir / "step" / "best.yaml") << "kernels:\n  - name: step\n    block: [8, 8, 1]\n";
  std::ofstream(dir / "residual" / "best.yaml")
      << "kernels:\n  - name: residual\n    defines: {chunk: \"64\"}\n";
  TunedValues t = TunedValues::load(dir);
  ASSERT_EQ(t.kernels().size(), 2u);
  EXPECT_EQ(t.files().size(), 2u);
  EXPECT_EQ(t.find("chunk", "")->kernel->file, dir / "residual" / "best.yaml");

  std::ofstream(dir / "residual" / "best.yaml") << "kernels:\n  - name: step\n";
  try {
    TunedValues::load(dir);
    FAIL() << "two results for one kernel were accepted";
  } catch (const TunedValuesError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel 'step' has tuned values in"), std::string::npos)
        << e.what();
  }
  fs::remove_all(dir / "residual");
  fs::remove_all(dir / "step");
  EXPECT_THROW(TunedValues::load(dir), TunedValuesError);
  EXPECT_THROW(TunedValues::load(dir / "missing.yaml"), TunedValuesError);
  fs::remove_all(dir);
}

TEST(KokkosTunedValues, ValuesConvertOnlyWhenTheyAreWhatTheVariableHolds) {
  EXPECT_EQ(r3::kokkos::as_integer("32"), 32);
  EXPECT_EQ(r3::kokkos::as_integer("-4"), -4);
  EXPECT_EQ(r3::kokkos::as_integer("16.0"), 16);
  EXPECT_FALSE(r3::kokkos::as_integer("16.5"));
  EXPECT_FALSE(r3::kokkos::as_integer("16x"));
  EXPECT_FALSE(r3::kokkos::as_integer(""));
  EXPECT_DOUBLE_EQ(*r3::kokkos::as_number("0.25"), 0.25);
  EXPECT_FALSE(r3::kokkos::as_number("nan"));
  EXPECT_FALSE(r3::kokkos::as_number("1e400"));
}

}  // namespace
