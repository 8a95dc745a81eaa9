#include "random_capture.hpp"

#include <cstring>

namespace r3::test {

using namespace r3::capture;

std::vector<std::byte> random_bytes(std::mt19937_64& rng, std::uint64_t size) {
  std::vector<std::byte> bytes(size);
  std::uint64_t i = 0;
  for (; i + 8 <= size; i += 8) {
    std::uint64_t word = rng();
    std::memcpy(bytes.data() + i, &word, 8);
  }
  std::uint64_t word = rng();
  if (i < size) std::memcpy(bytes.data() + i, &word, size - i);
  return bytes;
}

namespace {

Region random_region(std::mt19937_64& rng, ExpectedCapture& out, const CaptureShape& shape,
                     RegionKind kind, int index) {
  Region region;
  region.kind = kind;
  region.name = (kind == RegionKind::global ? "g" : "buffer_") + std::to_string(index);
  region.address = 0x7f0000000000ull + (rng() % (1ull << 32)) * 256;
  region.element_type = kAllElementTypes[rng() % std::size(kAllElementTypes)];
  std::bernoulli_distribution reuse(shape.reuse_probability);
  if (!out.contents.empty() && reuse(rng)) {
    auto it = out.contents.begin();
    std::advance(it, static_cast<long>(rng() % out.contents.size()));
    region.content = it->first;
    region.size = it->second.size();
    return region;
  }
  std::uint64_t size = shape.sizes[rng() % shape.sizes.size()];
  std::vector<std::byte> bytes = random_bytes(rng, size);
  region.content = hash_bytes(bytes);
  region.size = size;
  out.contents.emplace(region.content, std::move(bytes));
  return region;
}

}  // namespace

ExpectedCapture random_capture(std::uint64_t seed, const CaptureShape& shape) {
  std::mt19937_64 rng(seed);
  ExpectedCapture out;
  out.info.command_line = "./app --seed " + std::to_string(seed);
  out.info.created = "2026-11-21T00:00:00Z";
  out.info.host = "testhost";
  out.info.r3_version = "test";
  out.info.rank = static_cast<int>(seed % 4) - 1;
  out.info.device = DeviceInfo{"cuda",      "Test GPU",  "sm_90", 9,      0,     132,
                               80ull << 30, 50ull << 20, 3350.0,  "13.0", "13.0"};
  std::uint64_t sequence = 0;
  for (int k = 0; k < shape.kernels; ++k) {
    Kernel kernel;
    kernel.name = "_Z6kernel" + std::to_string(k) + "PfPKfi";
    kernel.demangled_name = "kernel" + std::to_string(k) + "(float*, float const*, int)";
    if (k % 2 == 1) {
      kernel.kokkos_label = "Label::kernel" + std::to_string(k);
      kernel.kokkos_choices["tile_size_0"] = {1, 2, 4, 8 * static_cast<std::int64_t>(k)};
      if (k % 4 == 1) kernel.kokkos_choices["team_size"] = {-1, 32};
    }
    std::vector<std::byte> ptx = random_bytes(rng, 100 + rng() % 1000);
    kernel.images["ptx"] = hash_bytes(ptx);
    out.contents.emplace(kernel.images["ptx"], std::move(ptx));
    int params = 1 + static_cast<int>(rng() % 6);
    for (int p = 0; p < params; ++p) {
      kernel.params.push_back(Param{static_cast<std::uint64_t>(p) * 8, 8, (rng() % 2) == 0,
                                    p % 3 == 0 ? "float*" : ""});
    }
    for (int l = 0; l < shape.launches_per_kernel; ++l) {
      Launch launch;
      launch.sequence = sequence++;
      launch.grid = Dim3{static_cast<std::uint32_t>(1 + rng() % 4096),
                         1 + static_cast<std::uint32_t>(rng() % 8), 1};
      launch.block = Dim3{static_cast<std::uint32_t>(32 << (rng() % 5)), 1, 1};
      launch.shared_memory_bytes = static_cast<std::uint32_t>(rng() % 49152);
      launch.stream = rng();
      launch.args = random_bytes(rng, static_cast<std::uint64_t>(params) * 8);
      if (l % 2 == 0) launch.app_time_us = static_cast<double>(rng() % 100000) / 7.0;
      for (int r = 0; r < shape.regions_per_launch; ++r) {
        launch.prologue.push_back(random_region(rng, out, shape, RegionKind::allocation, r));
      }
      launch.globals.push_back(random_region(rng, out, shape, RegionKind::global, 0));
      for (int r = 0; r < shape.regions_per_launch / 2; ++r) {
        launch.epilogue.push_back(random_region(rng, out, shape, RegionKind::allocation, r));
      }
      kernel.launches.push_back(std::move(launch));
    }
    out.kernels.push_back(std::move(kernel));
  }
  return out;
}

void fill_capture(CaptureWriter& writer, const ExpectedCapture& expected) {
  for (const auto& [hash, bytes] : expected.contents) writer.put_content(bytes);
  for (const Kernel& kernel : expected.kernels) {
    Kernel without_launches = kernel;
    without_launches.launches.clear();
    std::size_t id = writer.add_kernel(without_launches);
    for (const Launch& launch : kernel.launches) writer.add_launch(id, launch);
  }
}

void write_capture(const std::filesystem::path& path, const ExpectedCapture& expected,
                   CaptureWriter::Options options) {
  CaptureWriter writer = CaptureWriter::create(path, expected.info, options);
  fill_capture(writer, expected);
  writer.close();
}

}  // namespace r3::test
