// A source whose compile-time sizes fix the shape it must be launched with says so:
//
//   R3_LAUNCH_BLOCK(BLOCK_SIZE, BLOCK_SIZE, 1)
//
// declares the block as expressions of its R3_TUNABLEs (integers, names, + - * / and
// parentheses). Each candidate of that source is launched with the block its values give, the
// grid derived from the recorded work (so that the same threads' worth of work is covered), and
// the launch level leaves it alone. tune.yaml's `block: [TILE, TILE, 1]` says the same for every
// source of a kernel that declares those tunables. Like R3_TUNABLE, the declaration is defined
// away when the source is compiled.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "r3/mutation.hpp"

namespace r3::evolve {

using BlockExpressions = std::array<std::string, 3>;

// The first R3_LAUNCH_BLOCK(x, y, z) declaration of `source`.
std::optional<BlockExpressions> parse_launch_block(std::string_view source);

// Whether `source` declares R3_LAUNCH_GRID(recorded): its blocks each do one item of work (a box,
// a row), so a new block keeps the recorded grid instead of one derived from the recorded
// threads.
bool keeps_recorded_grid(std::string_view source);

// The value of `expression` with names looked up in `values`; nullopt when it does not parse,
// names something `values` lacks, or divides by zero.
std::optional<std::int64_t> evaluate_size(std::string_view expression,
                                          const std::map<std::string, std::string>& values);

// The names an expression uses.
std::vector<std::string> names_in(std::string_view expression);

using r3::kKeepGridDeclaration;  // r3/mutation.hpp, with what the mutators write
using r3::kLaunchBlockPreamble;

}  // namespace r3::evolve
