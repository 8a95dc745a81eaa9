// Skips a GPU test, saying why, where no GPU can be used (no driver, no device).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "driver.hpp"

// `what`: what goes untested, e.g. "the CUDA backend".
#define R3_REQUIRE_GPU_FOR(what)                                                 \
  do {                                                                           \
    if (std::string why = ::r3::replay::cuda::why_unavailable(); !why.empty())   \
      GTEST_SKIP() << "no GPU here, so " << (what) << " is not tested: " << why; \
  } while (0)
