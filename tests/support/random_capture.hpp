// Random but reproducible captures (seeded), with the bytes of every content kept for comparison.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <vector>

#include "r3/capture.hpp"

namespace r3::test {

struct ExpectedCapture {
  capture::CaptureInfo info;
  std::vector<capture::Kernel> kernels;
  std::map<Hash128, std::vector<std::byte>> contents;
};

struct CaptureShape {
  int kernels = 3;
  int launches_per_kernel = 3;
  int regions_per_launch = 4;
  // Region sizes are drawn from this list.
  std::vector<std::uint64_t> sizes = {0, 1, 7, 64, 4096, 65537, 1u << 20};
  // Chance that a region reuses a content already in the capture.
  double reuse_probability = 0.4;
};

std::vector<std::byte> random_bytes(std::mt19937_64& rng, std::uint64_t size);
ExpectedCapture random_capture(std::uint64_t seed, const CaptureShape& shape);
// Puts the model into `writer`: every content first, then the kernels and their launches.
void fill_capture(capture::CaptureWriter& writer, const ExpectedCapture& expected);
// Writes the model into a new capture file and closes it.
void write_capture(const std::filesystem::path& path, const ExpectedCapture& expected,
                   capture::CaptureWriter::Options options = {});

}  // namespace r3::test
