#include <gtest/gtest.h>

#include "r3/cuda_device.hpp"
#include "r3/cuda_error.hpp"
#include "r3/error.hpp"

namespace {

TEST(Error, WhatCarriesFileLineColumnKeyAndKernel) {
  r3::ErrorContext context;
  context.file = "tune.yaml";
  context.line = 12;
  context.column = 5;
  context.key = "search.levels";
  context.kernel = "stencil";
  r3::ConfigError error("bad value", context);
  EXPECT_STREQ(error.what(), "tune.yaml:12:5: search.levels: kernel 'stencil': bad value");
  EXPECT_EQ(error.message(), "bad value");
  EXPECT_EQ(error.context().line, 12);
}

TEST(Error, LeavesOutUnknownParts) {
  EXPECT_STREQ(r3::Error("plain").what(), "plain");
  EXPECT_STREQ(r3::Error("m", r3::in_file("a.h5")).what(), "a.h5: m");
  r3::ErrorContext no_column = r3::in_file("f");
  no_column.line = 3;
  EXPECT_STREQ(r3::Error("m", no_column).what(), "f:3: m");
}

TEST(Error, SubclassesAreCaughtAsError) {
  auto throws = [](int which) {
    switch (which) {
      case 0:
        throw r3::ConfigError("c");
      case 1:
        throw r3::FormatError("f");
      case 2:
        throw r3::IoError("H5Fopen", "i");
      case 3:
        throw r3::UnknownKernelError("u");
      case 4:
        throw r3::UsageError("x");
      default:
        throw r3::NotAvailableError("n");
    }
  };
  for (int i = 0; i < 6; ++i) EXPECT_THROW(throws(i), r3::Error) << i;
}

TEST(Error, IoErrorNamesTheCall) {
  r3::IoError error("H5Dread", "read failed", r3::in_file("c.h5"));
  EXPECT_EQ(error.api(), "H5Dread");
  EXPECT_STREQ(error.what(), "c.h5: H5Dread: read failed");
}

}  // namespace

namespace {

// A failing CUDA call as the recorder and the replayer report it: the API named from the call's
// text, the driver's description, and whether the context is lost.
TEST(CudaError, NamesTheApiAndSaysWhetherTheContextIsLost) {
  const r3::CudaError copy("driver().cuMemcpyDtoH(host, device, 64)", 700,
                           "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access");
  EXPECT_EQ(copy.api(), "cuMemcpyDtoH");
  EXPECT_NE(std::string(copy.what())
                .find("cuMemcpyDtoH failed: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access"),
            std::string::npos)
      << copy.what();
  EXPECT_EQ(copy.status(), 700);
  EXPECT_TRUE(copy.sticky());
  const r3::CudaError alloc("cuMemAlloc(&p, n)", 2, "CUDA_ERROR_OUT_OF_MEMORY: out of memory");
  EXPECT_EQ(alloc.api(), "cuMemAlloc");
  EXPECT_FALSE(alloc.sticky()) << "out of memory leaves the context usable";
  for (int status : {700, 702, 709, 710, 714, 715, 716, 717, 718, 719, 214})
    EXPECT_TRUE(r3::is_sticky_cuda_status(status)) << status;
  for (int status : {0, 1, 2, 200, 201, 209, 218, 300, 400, 500, 701, 999})
    EXPECT_FALSE(r3::is_sticky_cuda_status(status)) << status;
}

}  // namespace

namespace {

// A device's facts from a driver's answers, as the recorder and the replayer both read them.
TEST(CudaDevice, FactsComeFromTheDriversAnswers) {
  r3::CudaDriverAnswers answers;
  answers.attribute = [](int attribute) {
    switch (attribute) {
      case r3::cuda_attribute::compute_capability_major:
        return 9;
      case r3::cuda_attribute::compute_capability_minor:
        return 0;
      case r3::cuda_attribute::multiprocessor_count:
        return 132;
      case r3::cuda_attribute::l2_cache_size:
        return 50 << 20;
      default:
        return -1;
    }
  };
  answers.name = "NVIDIA H100 80GB HBM3";
  answers.memory_bytes = std::uint64_t{80} << 30;
  answers.driver_version = 13000;
  answers.toolkit_version = 12040;
  const r3::capture::DeviceInfo d = r3::cuda_device_info(answers);
  EXPECT_EQ(d.backend, "cuda");
  EXPECT_EQ(d.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.architecture, "sm_90");
  EXPECT_EQ(d.compute_capability_major, 9);
  EXPECT_EQ(d.multiprocessor_count, 132);
  EXPECT_EQ(d.l2_cache_bytes, std::uint64_t{50} << 20);
  EXPECT_EQ(d.memory_bytes, std::uint64_t{80} << 30);
  EXPECT_EQ(d.driver_version, "13.0");
  EXPECT_EQ(d.toolkit_version, "12.4");
  EXPECT_EQ(r3::cuda_version_text(0), "");
}

}  // namespace
