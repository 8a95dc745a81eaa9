// Exit status of r3 and r3-mpi (documented in docs/troubleshooting.md).
#pragma once

#include <exception>

#include "r3/error.hpp"
#include "r3/log.hpp"

namespace r3 {

inline constexpr int exit_ok = 0;
inline constexpr int exit_error = 1;          // an r3::Error: bad input, failing I/O, ...
inline constexpr int exit_usage = 2;          // wrong command line
inline constexpr int exit_not_available = 3;  // a part this build of r3 does not contain
inline constexpr int exit_stopped = 4;  // r3-mpi stopped by SIGTERM/SIGINT/SIGUSR1; --resume goes on

// Logs the exception being handled and returns the exit status it stands for. Call it only
// inside a catch block.
inline int exit_status_of_current_exception() {
  try {
    throw;
  } catch (const NotAvailableError& e) {
    log::error(e.what());
    return exit_not_available;
  } catch (const UsageError& e) {
    log::error(e.what());
    return exit_usage;
  } catch (const Error& e) {
    log::error(e.what());
    return exit_error;
  } catch (const std::exception& e) {
    log::error("internal error: ", e.what());
    return exit_error;
  }
}

}  // namespace r3
