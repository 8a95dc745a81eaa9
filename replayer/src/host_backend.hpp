#pragma once

#include <memory>

#include "r3/replay/backend.hpp"

namespace r3::replay {

std::unique_ptr<Backend> make_host_backend();

}  // namespace r3::replay
