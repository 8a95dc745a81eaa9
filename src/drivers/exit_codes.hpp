// Exit status of r3 and r3-mpi (documented in docs/troubleshooting.md).
#pragma once

namespace r3 {

inline constexpr int exit_ok = 0;
inline constexpr int exit_error = 1;          // an r3::Error: bad input, failing I/O, ...
inline constexpr int exit_usage = 2;          // wrong command line
inline constexpr int exit_not_available = 3;  // a part this build of r3 does not contain

}  // namespace r3
