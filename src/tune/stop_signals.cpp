#include "stop_signals.hpp"

#include <signal.h>

#include <csignal>
#include <initializer_list>

namespace r3::tune {
namespace {

volatile std::sig_atomic_t g_signal = 0;
volatile std::sig_atomic_t g_second_ends_process = 0;

extern "C" void on_stop_signal(int signal) {
  // Only async-signal-safe calls here: sigaction-installed SIG_DFL and raise are.
  if (g_second_ends_process != 0 && g_signal != 0 && signal != SIGUSR1) {
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    ::sigaction(signal, &default_action, nullptr);
    ::raise(signal);
    return;
  }
  // SIGTERM after SIGUSR1 still abandons: the end is nearer than a generation.
  if (g_signal == 0 || g_signal == SIGUSR1) g_signal = signal;
}

}  // namespace

void catch_stop_signals(bool second_ends_process) {
  g_second_ends_process = second_ends_process ? 1 : 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // MPI and pipe I/O carry on where they were
  for (int signal : {SIGTERM, SIGINT, SIGUSR1}) ::sigaction(signal, &action, nullptr);
}

StopRequest stop_requested() {
  switch (g_signal) {
    case 0: return StopRequest::none;
    case SIGUSR1: return StopRequest::finish_generation;
    default: return StopRequest::abandon_generation;
  }
}

const char* stop_signal_name() {
  switch (g_signal) {
    case SIGUSR1: return "SIGUSR1";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    default: return "";
  }
}

}  // namespace r3::tune
