#include "apply_check.hpp"

#include <cmath>
#include <cstring>

#include "code_images.hpp"

namespace r3::record::cuda {

void Allocations::on(const MemoryEvent& event) {
  std::lock_guard lock(mutex_);
  if (event.kind == MemoryEvent::Kind::freed) {
    live_.erase(event.address);
  } else if (event.bytes > 0) {
    live_[event.address] = event.bytes;
  }
}

std::map<CUdeviceptr, std::size_t> Allocations::snapshot() const {
  std::lock_guard lock(mutex_);
  return live_;
}

namespace {

bool copy_out(CUdeviceptr from, std::size_t bytes, std::string& to, std::string& why) {
  to.resize(bytes);
  const CUresult rc = cuMemcpyDtoH(to.data(), from, bytes);
  if (rc != CUDA_SUCCESS)
    why = "cuMemcpyDtoH of " + std::to_string(bytes) + " bytes: " + error_name(rc);
  return rc == CUDA_SUCCESS;
}

bool copy_in(CUdeviceptr to, const std::string& from, std::string& why) {
  const CUresult rc = cuMemcpyHtoD(to, from.data(), from.size());
  if (rc != CUDA_SUCCESS)
    why = "cuMemcpyHtoD of " + std::to_string(from.size()) + " bytes: " + error_name(rc);
  return rc == CUDA_SUCCESS;
}

// Elements of `got` outside the tolerance against `want`; the largest difference in `worst`.
template <typename T>
std::size_t differing(const std::string& got, const std::string& want, double rtol, double atol,
                      double& worst) {
  const std::size_t n = got.size() / sizeof(T);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    T x, y;
    std::memcpy(&x, got.data() + i * sizeof(T), sizeof(T));
    std::memcpy(&y, want.data() + i * sizeof(T), sizeof(T));
    if (std::memcmp(&x, &y, sizeof(T)) == 0) continue;  // the same bits (NaNs included)
    const double difference = std::abs(double(x) - double(y));
    if (!(difference <= atol + rtol * std::abs(double(y)))) {
      ++bad;
      worst = std::isnan(difference) ? difference : std::max(worst, difference);
    }
  }
  return bad;
}

}  // namespace

std::map<CUdeviceptr, capture::ElementType> argument_types(
    const std::string& demangled, const std::vector<capture::Param>& params, void** kernel_params) {
  std::map<CUdeviceptr, capture::ElementType> types;
  if (!kernel_params) return types;  // arguments packed in `extra`: compared bit for bit
  const std::vector<std::string> declared = parameter_types(demangled);
  for (std::size_t i = 0; i < params.size() && i < declared.size(); ++i) {
    if (params[i].size != sizeof(CUdeviceptr) || !kernel_params[i]) continue;
    const capture::ElementType type = pointee_element_type(declared[i]);
    if (type == capture::ElementType::unknown) continue;
    CUdeviceptr address = 0;
    std::memcpy(&address, kernel_params[i], sizeof address);
    types.emplace(address, type);
  }
  return types;
}

std::optional<OriginalResults> run_original(
    const std::map<CUdeviceptr, std::size_t>& allocations,
    const std::map<CUdeviceptr, capture::ElementType>& types,
    const std::function<CUresult()>& launch_original, std::string& why) {
  CUresult rc = cuCtxSynchronize();
  if (rc != CUDA_SUCCESS) {
    why = "cuCtxSynchronize before the check: " + error_name(rc);
    return std::nullopt;
  }
  OriginalResults results;
  std::vector<std::string> before;
  for (const auto& [address, bytes] : allocations) {
    CheckedRegion region{address, bytes, capture::ElementType::unknown, {}};
    // The type of the first typed pointer into the allocation.
    auto typed = types.lower_bound(address);
    if (typed != types.end() && typed->first < address + bytes) region.type = typed->second;
    before.emplace_back();
    if (!copy_out(address, bytes, before.back(), why)) return std::nullopt;
    results.regions.push_back(std::move(region));
  }
  rc = launch_original();
  if (rc == CUDA_SUCCESS) rc = cuCtxSynchronize();
  if (rc != CUDA_SUCCESS) {
    why = "the application's kernel, run for the check: " + error_name(rc);
    return std::nullopt;
  }
  for (std::size_t i = 0; i < results.regions.size(); ++i) {
    CheckedRegion& region = results.regions[i];
    if (!copy_out(region.address, region.bytes, region.expected, why)) return std::nullopt;
    if (!copy_in(region.address, before[i], why)) return std::nullopt;
  }
  return results;
}

std::string compare_with_original(const OriginalResults& original,
                                  const std::vector<TypeTolerance>& tolerances) {
  std::string why;
  if (CUresult rc = cuCtxSynchronize(); rc != CUDA_SUCCESS)
    return "the winner failed: " + error_name(rc);
  std::string report;
  for (const CheckedRegion& region : original.regions) {
    std::string got;
    if (!copy_out(region.address, region.bytes, got, why)) return why;
    if (got == region.expected) continue;
    double rtol = 0, atol = 0;
    for (const TypeTolerance& t : tolerances)
      if (t.type == region.type) rtol = t.rtol, atol = t.atol;
    double worst = 0;
    std::size_t bad = 0, elements = region.bytes;
    switch (region.type) {
      case capture::ElementType::f32:
        bad = differing<float>(got, region.expected, rtol, atol, worst);
        elements = region.bytes / sizeof(float);
        break;
      case capture::ElementType::f64:
        bad = differing<double>(got, region.expected, rtol, atol, worst);
        elements = region.bytes / sizeof(double);
        break;
      default:
        for (std::size_t i = 0; i < got.size(); ++i) bad += got[i] != region.expected[i];
        break;
    }
    if (bad == 0) continue;
    char line[256];
    std::snprintf(line, sizeof line,
                  "%s0x%llx (%zu bytes, %s): %zu of %zu elements differ from the application's "
                  "kernel's results, the largest by %g",
                  report.empty() ? "" : "; ", static_cast<unsigned long long>(region.address),
                  region.bytes, std::string(capture::to_string(region.type)).c_str(), bad, elements,
                  worst);
    report += line;
  }
  if (!report.empty())
    for (const CheckedRegion& region : original.regions)
      if (!copy_in(region.address, region.expected, why)) return report + "; " + why;
  return report;
}

}  // namespace r3::record::cuda
