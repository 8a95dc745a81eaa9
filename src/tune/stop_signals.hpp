// Signals that end a tuning job early but cleanly. Slurm sends SIGUSR1 ahead of the end of an
// allocation when asked (`sbatch --signal=B:USR1@300`, `srun --signal=USR1@300`) and SIGTERM at
// it (then SIGKILL after KillWait); Ctrl-C sends SIGINT; mpirun forwards SIGUSR1 to every rank.
#pragma once

namespace r3::tune {

enum class StopRequest {
  none,
  finish_generation,   // SIGUSR1: the generation in flight is finished and committed
  abandon_generation,  // SIGTERM, SIGINT: the generation in flight is dropped (resume redoes it)
};

// Installs the handlers (they only record the signal). With `second_ends_process`, a second
// SIGTERM or SIGINT ends the process at once, as it would have without r3 (rank 0: a user's
// second Ctrl-C); evaluators keep serving rank 0 whatever they receive.
void catch_stop_signals(bool second_ends_process);
StopRequest stop_requested();
// The signal behind stop_requested() ("SIGTERM"), "" for none.
const char* stop_signal_name();

}  // namespace r3::tune
