#include "launch_shape.hpp"

namespace r3::replay {

std::string to_string(const capture::Dim3& dim) {
  return std::to_string(dim.x) + "x" + std::to_string(dim.y) + "x" + std::to_string(dim.z);
}

LaunchShape derive_shape(const capture::Launch& recorded,
                         const std::optional<capture::Dim3>& block, bool keep_grid) {
  LaunchShape shape{recorded.grid, recorded.block, recorded.shared_memory_bytes, {}};
  if (!block || *block == recorded.block) return shape;
  shape.block = *block;
  if (keep_grid) return shape;
  if (block->x == 0 || block->y == 0 || block->z == 0) return shape;  // check_shape says why
  shape.grid = capture::covering_grid(recorded.grid, recorded.block, *block);
  return shape;
}

std::string check_shape(const LaunchShape& shape, const LaunchLimits& limits) {
  const capture::Dim3& b = shape.block;
  const capture::Dim3& g = shape.grid;
  if (b.volume() == 0 || g.volume() == 0)
    return "empty launch shape (grid " + to_string(g) + ", block " + to_string(b) + ")";
  if (b.x > limits.max_block.x || b.y > limits.max_block.y || b.z > limits.max_block.z)
    return "block " + to_string(b) + " exceeds the device's maximum block dimensions " +
           to_string(limits.max_block);
  if (b.volume() > limits.max_threads_per_block)
    return "block " + to_string(b) + " = " + std::to_string(b.volume()) +
           " threads exceeds the device's " + std::to_string(limits.max_threads_per_block) +
           " threads per block";
  if (b.volume() > limits.function_max_threads)
    return "block " + to_string(b) + " = " + std::to_string(b.volume()) + " threads exceeds the " +
           std::to_string(limits.function_max_threads) +
           " threads per block this compiled kernel allows (" + std::to_string(limits.registers) +
           " registers per thread, or its launch bounds)";
  if (g.x > limits.max_grid.x || g.y > limits.max_grid.y || g.z > limits.max_grid.z)
    return "grid " + to_string(g) + " exceeds the device's maximum grid dimensions " +
           to_string(limits.max_grid);
  const std::uint64_t shared = limits.static_shared_bytes + shape.dynamic_shared_bytes;
  if (shared > limits.max_shared_bytes)
    return std::to_string(limits.static_shared_bytes) + " bytes of static and " +
           std::to_string(shape.dynamic_shared_bytes) +
           " bytes of dynamic shared memory exceed the device's " +
           std::to_string(limits.max_shared_bytes) + " bytes per block";
  return "";
}

}  // namespace r3::replay
