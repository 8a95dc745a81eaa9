// What a recorder (the host capture API, the CUDA injection library) learns from the environment
// `r3 record` gives the application: whether this process records, where, and which kernels.
#pragma once

#include <set>
#include <string>

namespace r3::record::session {

std::string environment(const char* name);
// "0,3,5" -> {0,3,5}; anything unparsable makes the list empty (record every rank).
std::set<int> parse_ranks(const std::string& text);
bool rank_selected();
// R3_RECORD_OUTPUT is set and this rank is selected.
bool recording_requested();
// Under an MPI launcher each rank writes its own file: capture.h5 -> capture.rank3.h5.
std::string output_path();
std::string rank_output_path(std::string path, int rank);
std::string this_command_line();

}  // namespace r3::record::session
