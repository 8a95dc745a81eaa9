// A run record with every field set, for the run database's tests.
#pragma once

#include <cstddef>
#include <string>

#include "r3/hash.hpp"
#include "r3/run_database.hpp"

namespace r3::test {

inline run::RunRecord sample_run(std::size_t candidates) {
  using namespace r3::run;
  RunRecord r;
  r.tune_yaml = "capture: demo.h5\nkernels: [stencil2d]\n";
  r.tune_file = "/tmp/tune.yaml";
  r.r3_version = "0.1.0";
  r.generations = 3;
  r.elapsed_seconds = 12.5;
  r.sessions = 2;
  r.search_state = R"({"rng":"1 2 3"})";
  std::string a = "extern \"C\" void k() {}\n", b = "extern \"C\" void k() { /* b */ }\n";
  r.sources[hash_string(a)] = a;
  r.sources[hash_string(b)] = b;
  for (std::size_t i = 0; i < candidates; ++i) {
    CandidateRecord c;
    c.id = i;
    c.generation = static_cast<std::uint32_t>(i / 4);
    c.parent = i == 0 ? -1 : 0;
    c.source = hash_string(i % 2 ? b : a);
    c.level = i == 0 ? r3::run::CandidateLevel::original : r3::run::CandidateLevel::compiler;
    c.plan = R"({"levels":{"compiler":[[2],[0]]}})";
    c.description = "opt=3 fast_math=" + std::string(i % 3 ? "on" : "off");
    c.outcome = i % 5 == 4 ? r3::Outcome::crash : r3::Outcome::ok;
    c.message = i % 5 == 4 ? "killed by signal 11 (Segmentation fault)" : "";
    c.seconds = 1e-3 * (i + 1);
    c.min_seconds = c.seconds * 0.9;
    c.max_seconds = c.seconds * 1.1;
    c.registers = -1;
    c.code_bytes = 1000 + i;
    c.evaluator = static_cast<std::int32_t>(1 + i % 2);
    c.configuration = R"({"flags":["-ffast-math"],"passes":"default<O3>"})";
    c.run_seconds = 0.5 * static_cast<double>(c.generation + 1);
    r.candidates.push_back(c);
  }
  for (std::uint32_t round = 0; round < 3; ++round) {
    ConfirmationRecord c;
    c.candidate = round % 2 ? 0 : 3;
    c.after_generation = 3;
    c.round = round;
    c.evaluator = 2;
    c.repeats = 50;
    c.outcome = round == 2 ? r3::Outcome::timeout : r3::Outcome::ok;
    c.message = round == 2 ? "took longer than 30 s" : "";
    c.seconds = 1e-3 * (round + 1);
    c.min_seconds = 0.9e-3;
    c.max_seconds = 4e-3;
    r.confirmations.push_back(c);
  }
  // A code image is binary: every byte value, NULs included.
  std::string image;
  for (int b = 0; b < 512; ++b) image += static_cast<char>(b % 256);
  r.codes.push_back({3, 0, "sm_90", "13.0", "_Z4heatPKfPfii", image});
  return r;
}

}  // namespace r3::test
