// A second input for verification: the recorded inputs with their floating-point values moved a
// little, run by the application's own code and by the candidate, whose results must agree.
//
// Why: a recorded launch may change nothing a candidate could fail to change. Rodinia's
// bpnn_adjust_weights_cuda, recorded in backprop, adds ETA * delta * ly to its weights with every
// delta exactly 0 (the hidden units saturate), so the weights come out as they went in. A
// candidate that launched 1/16 of the threads (HEIGHT=4, block 4x4, the recorded grid) then
// verified against the recording and "ran 2.6x faster". On a second input whose deltas are not
// 0, the application's code changes every weight and that candidate does not.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "r3/capture.hpp"
#include "r3/replay/backend.hpp"
#include "recorded.hpp"

namespace r3::replay {

// Whether a region's elements are moved on the second input (f32 and f64; integers may be
// indices, and other types have no values to move).
bool moved_on_second_input(capture::ElementType type);

// `bytes` as elements of `type`, each finite one moved by up to 1/64 of the region's mean
// magnitude (1/64 where the region is all zeros), the same way for the same `seed`. NaN and
// infinities stay; types that are not moved come back as they are.
std::vector<std::byte> second_input(std::span<const std::byte> bytes, capture::ElementType type,
                                    std::uint64_t seed);

// A region of a launch as the second input sees it: what it held before the launch (null
// where the launch did not read it) and its element type.
struct RegionBefore {
  Bytes before;
  capture::ElementType type = capture::ElementType::unknown;
  std::uint64_t size = 0;  // the region's, as recorded
};

// The contents of launch `launch`'s regions on its second input, where they differ from the
// recording (moved); null elsewhere. `regions` empty when the launch reads no region that is
// moved. The same in every process.
struct MovedContents {
  std::vector<Bytes> regions;
  std::uint64_t bytes = 0;  // host memory its second input takes: the moved regions, and the
                            // reference's results of every region
};
MovedContents moved_contents(std::size_t launch, const std::vector<RegionBefore>& regions);

// Says that kernel `kernel`'s candidates are verified on the recording alone, and why.
void warn_no_second_input(const std::string& kernel, const std::string& why);

// Why the second inputs of a kernel (`bytes`: the moved regions and the reference's results)
// are not kept: host memory would be short (more than half of what is available); "" to keep
// them. Candidates are then verified on the recording alone.
std::string second_input_memory_short(std::uint64_t bytes);

// How much looser than the region's tolerance the second input compares (relative, and of the
// region's mean magnitude): it judges the work done, the recorded data the precision.
inline constexpr double kSecondInputLooseness = 1e-3;

// What a region's check on the second input needs to know of what the application's code left
// there (`expected`), computed once per launch rather than once per candidate: whether the code
// changed the region (`before`: what it held before), and the mean magnitude of its elements as
// `type` (f32 and f64; 0 for other types).
struct SecondInputReference {
  bool changes = false;
  capture::ElementType type = capture::ElementType::unknown;
  double mean_magnitude = 0;
};
SecondInputReference second_input_reference(std::span<const std::byte> expected,
                                            std::span<const std::byte> before,
                                            capture::ElementType type);

// How a region is compared on the second input: as `type` (the one tune.yaml's verify section
// gives it, else the recorded one); where the application's code changed it, with the type's
// tolerance loosened to kSecondInputLooseness and no more than 1% of the elements it changed
// left alone (verify.hpp); bitwise where it did not change it. `expected` is read only when
// `reference` was computed for another type.
struct SecondInputRule {
  capture::ElementType type = capture::ElementType::unknown;
  replay::Tolerance tolerance;
};
SecondInputRule second_input_rule(const SecondInputReference& reference,
                                  std::span<const std::byte> expected,
                                  const capture::Region& recorded, const RunOptions& options);

// A check's name, address and whether it was expected to change, as the second input's are.
void label_second_input_check(RegionCheck& check, const capture::Region& recorded,
                              const SecondInputReference& reference);

// A region after the candidate ran on the second input (`actual`) against what the
// application's code left there (`expected`), `before` being what it held before both runs,
// compared on the host by second_input_rule.
RegionCheck check_on_second_input(std::span<const std::byte> actual,
                                  std::span<const std::byte> expected,
                                  std::span<const std::byte> before,
                                  const capture::Region& recorded, const RunOptions& options);

// The message of a candidate that failed on the second input of `launch`, from the first
// failed check's (first_failure).
std::string failed_on_second_input(std::size_t launch, std::string failure);

}  // namespace r3::replay
