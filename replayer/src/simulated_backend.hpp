// The simulate backend (r3/replay/simulation.hpp), made by make_backend("simulate", options).
#pragma once

#include <memory>
#include <string_view>

#include "r3/replay/backend.hpp"

namespace r3::replay {

std::unique_ptr<Backend> make_simulated_backend(std::string_view options);

}  // namespace r3::replay
