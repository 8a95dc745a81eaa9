// The cores this process may run on, counted one way for every part of r3 that sizes a thread
// pool by them (the search's fit and mutator threads, an evaluator's compile threads).
#pragma once

#include <cstddef>

namespace r3 {

// The cores in the calling thread's affinity mask (as Slurm's or mpirun's binding leaves it);
// the machine's cores where the mask cannot be read. At least 1.
std::size_t usable_cores();

// usable_cores() minus the one the caller works on, at most `limit`: 0 on a single core.
std::size_t spare_cores(std::size_t limit);

}  // namespace r3
