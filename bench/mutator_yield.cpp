// bench/mutator_yield: how often each built-in mutator produces a variant that compiles, on the
// kernels of the examples (host C++) and the CUDA kernels of tests/data/kernels.
//
//   mutator_yield [--show] [-D NAME=VALUE ...] [-I DIR ...] [FILE:ENTRY ...]
//                                                (default: the bundled kernels)
//
// -D and -I are the build's, as a kernel's tune.yaml defines and include_dirs: the mutators read
// the kernels with them, and every compile below has them (a public program's unit that uses a
// size its Makefile gives with -D does not parse without).
//
// For each mutator it prints the rewrites it attempted, how many compiled with Clang at the
// tunables' defaults (only those are ever offered), how many compiled with Clang at every value
// of their tunables, and for CUDA, how many compiled with NVRTC at every value.
#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "nvrtc_check.hpp"
#include "r3/capture.hpp"
#include "r3/evolve/mutators.hpp"

namespace {

using namespace r3::evolve;

struct Kernel {
  // A constructor rather than an aggregate: GCC 12 warns (-Wmissing-field-initializers) about
  // every aggregate initialisation that leaves out the members read_instance() sets.
  Kernel(std::string path, std::string entry, std::array<std::uint32_t, 3> block = {0, 0, 0})
      : path(std::move(path)), entry(std::move(entry)), block(block) {}
  std::string path, entry;
  std::array<std::uint32_t, 3> block;  // as recorded; 0: unknown (the constructor's default)
  // A template kernel's recorded instance, as its demangled name writes it
  // ("reduce<float, 256>(float const*, float*, unsigned int)"): the template arguments are the
  // defaults of its integer parameters, and every compile instantiates it.
  std::vector<std::string> template_arguments;
  std::string instance;  // "template __global__ void reduce<float, 256>(...);", or none
};

// "reduce<float, 256>(float const*, float*, unsigned int)" into its name, its template
// arguments (as the job takes them from a capture) and an explicit instantiation.
void read_instance(const std::string& text, Kernel& kernel) {
  const std::string instance = r3::capture::instance_name(text);
  kernel.entry = instance.substr(0, instance.find('<'));
  kernel.template_arguments = r3::capture::template_arguments(instance);
  if (!kernel.template_arguments.empty() && text.find('(') != std::string::npos)
    kernel.instance = "\ntemplate __global__ void " + text + ";\n";
}

std::vector<Kernel> default_kernels() {
  const std::string root = R3_BENCH_SOURCE_DIR;
  std::vector<Kernel> kernels = {
      Kernel(root + "/examples/demo/stencil.cpp", "stencil2d"),
      Kernel(root + "/examples/spmv/spmv.cpp", "spmv_csr"),
      Kernel(root + "/examples/particles/particles.cpp", "push_particles")};
  for (const char* name :
       {"saxpy", "stencil2d", "spmv_csr", "matvec", "reduce_sum", "matmul_tiled"}) {
    kernels.emplace_back(root + "/tests/data/kernels/" + name + ".cu", name);
  }
  return kernels;
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every assignment of values to the tunables (their cross product).
std::vector<std::vector<std::pair<std::string, std::string>>> assignments(
    const std::vector<Tunable>& tunables) {
  std::vector<std::vector<std::pair<std::string, std::string>>> all = {{}};
  for (const Tunable& t : tunables) {
    std::vector<std::vector<std::pair<std::string, std::string>>> next;
    for (const auto& partial : all) {
      for (const std::string& v : t.values) {
        next.push_back(partial);
        next.back().emplace_back(t.name, v);
      }
    }
    all = std::move(next);
  }
  return all;
}

struct Counts {
  int attempted = 0, clang_default = 0, clang_all = 0, cuda = 0, nvrtc_all = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (!mutators_available()) {
    std::fprintf(stderr, "mutator_yield: this r3 was built without LLVM: no built-in mutators\n");
    return 3;
  }
  std::vector<Kernel> kernels;
  bool show = false;
  MutationContext build;  // -D and -I, for every kernel
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::printf(
          "usage: mutator_yield [--show] [-D NAME=VALUE ...] [-I DIR ...] "
          "[FILE:ENTRY[@XxYxZ] ...]\n"
          "  FILE:ENTRY  a kernel source (.cu: CUDA, else C++) and its kernel (default: the "
          "bundled\n"
          "              example kernels); @XxYxZ: the block it was recorded with (parametrise\n"
          "              couples the launch to sizes equal to it). A template kernel's ENTRY is\n"
          "              its recorded instance as demangled, e.g. 'reduce<float, 256>(float\n"
          "              const*, float*, unsigned int)': its integer arguments are the defaults\n"
          "              of the template parameters parametrise exposes, and each compile\n"
          "              instantiates it\n"
          "  -D NAME[=VALUE], -I DIR\n"
          "              the build's macros and include directories (tune.yaml's defines and\n"
          "              include_dirs): the kernels are read and compiled with them\n"
          "  --show      print every rewrite\n");
      return 0;
    }
    if (arg == "--show") {
      show = true;
      continue;
    }
    if (arg.rfind("-D", 0) == 0 || arg.rfind("-I", 0) == 0) {
      std::string value = arg.substr(2);
      if (value.empty()) {
        if (i + 1 == argc) {
          std::fprintf(stderr, "mutator_yield: %s needs a value\n", arg.c_str());
          return 2;
        }
        value = argv[++i];
      }
      if (arg[1] == 'I') {
        build.include_dirs.push_back(value);
      } else {
        const auto equals = value.find('=');
        build.defines[value.substr(0, equals)] =
            equals == std::string::npos ? "1" : value.substr(equals + 1);
      }
      continue;
    }
    std::array<std::uint32_t, 3> block{0, 0, 0};
    if (const auto at = arg.rfind('@'); at != std::string::npos) {
      if (std::sscanf(arg.c_str() + at + 1, "%ux%ux%u", &block[0], &block[1], &block[2]) != 3) {
        std::fprintf(stderr, "mutator_yield: expected @XxYxZ, got '%s'\n", arg.c_str() + at);
        return 2;
      }
      arg.resize(at);
    }
    const auto colon = arg.find(':');  // the first: a namespaced ENTRY has more
    if (colon == std::string::npos) {
      std::fprintf(stderr, "mutator_yield: expected FILE:ENTRY, got '%s'\n", arg.c_str());
      return 2;
    }
    Kernel kernel{arg.substr(0, colon), "", block};
    read_instance(arg.substr(colon + 1), kernel);
    kernels.push_back(kernel);
  }
  if (kernels.empty()) kernels = default_kernels();
  const std::vector<std::string> all_mutators = {"restrict", "unroll",      "launch_bounds",
                                                 "ldg",      "hoist_loads", "parametrise"};
  std::map<std::string, Counts> counts;
  const auto start = std::chrono::steady_clock::now();
  for (const Kernel& k : kernels) {
    const std::string source = read(k.path);
    const bool cuda = k.path.ends_with(".cu");
    const SourceLanguage language = cuda ? SourceLanguage::cuda : SourceLanguage::cpp;
    MutationContext context = build;
    context.recorded_block = k.block;
    context.template_arguments = k.template_arguments;
    MutationReport report = mutate(source, k.path, k.entry, language, all_mutators, context);
    if (!report.diagnostics.empty())
      std::fprintf(stderr, "%s: %s", k.path.c_str(), report.diagnostics.c_str());
    for (const Rejection& r : report.rejected) {
      ++counts[r.mutation.mutator].attempted;
      std::fprintf(stderr, "%s: %s (%s) does not compile: %s\n", k.path.c_str(),
                   r.mutation.mutator.c_str(), r.mutation.description.c_str(), r.error.c_str());
      if (show) std::fprintf(stderr, "%s\n", r.mutation.source.c_str());
    }
    for (const Mutation& m : report.mutations) {
      if (show)
        std::printf("--- %s: %s (%s)\n%s\n", k.path.c_str(), m.mutator.c_str(),
                    m.description.c_str(), m.source.c_str());
      Counts& c = counts[m.mutator];
      ++c.attempted;
      ++c.clang_default;
      bool clang_all = true, nvrtc_all = true;
      for (const auto& values : assignments(m.tunables)) {
        std::string defines;
        std::vector<std::string> options;
        for (const auto& [name, value] : build.defines)
          options.push_back("-D" + name + "=" + value);
        for (const auto& dir : build.include_dirs) options.push_back("-I" + dir.string());
        for (const auto& [name, value] : values) {
          defines += "#define " + name + " " + value + "\n";
          options.push_back("-D" + name + "=" + value);
        }
        std::string log;
        clang_all =
            clang_all && compiles(defines + m.source + k.instance, k.path, language, log, context);
        if (cuda && r3::bench::nvrtc_available()) {
          nvrtc_all = nvrtc_all &&
                      r3::bench::nvrtc_compiles(m.source + k.instance, k.path, options, log);
        }
        if (!log.empty() && (!clang_all || !nvrtc_all)) {
          std::fprintf(stderr, "%s: %s (%s) failed:\n%s\n", k.path.c_str(), m.mutator.c_str(),
                       m.description.c_str(), log.c_str());
        }
      }
      c.clang_all += clang_all;
      if (cuda) {
        ++c.cuda;
        c.nvrtc_all += nvrtc_all && r3::bench::nvrtc_available();
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("built-in mutators on %zu kernels (%.1f s)%s\n", kernels.size(), seconds,
              r3::bench::nvrtc_available() ? "" : "; no NVRTC in this build");
  std::printf("%-14s %9s %14s %16s %6s %16s\n", "mutator", "attempted", "clang default",
              "clang all values", "cuda", "nvrtc all values");
  for (const std::string& name : all_mutators) {
    const Counts& c = counts[name];
    std::printf("%-14s %9d %14d %16d %6d %16d\n", name.c_str(), c.attempted, c.clang_default,
                c.clang_all, c.cuda, c.nvrtc_all);
  }
  return 0;
}
