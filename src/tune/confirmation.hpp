// The winner confirmation (DESIGN.md §6): the best candidates of each kernel and its original
// re-measured, interleaved, with more repetitions, on every evaluator, once the search ends.
#pragma once

#include "dispatcher.hpp"
#include "master.hpp"

namespace r3::tune {

// Wall time the confirmation will take, from the measurements so far (each evaluator runs every
// re-measurement): the budget keeps it in reserve.
double confirmation_estimate(const Master& m);

// Runs it and adds its measurements to m.record (committed by the caller). False when a signal
// stopped it: nothing of it is kept, and a resume runs it again.
bool confirm_winners(Master& m, Dispatcher& dispatcher);

}  // namespace r3::tune
