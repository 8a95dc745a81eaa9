// Writes and reads back a capture through the installed libr3core, calls a kernel through the
// installed host capture API (not under `r3 record`: the call just runs), and reads a tune.yaml
// through the installed libr3config.
#include <iostream>
#include <string_view>

#include "r3/capture.hpp"
#include "r3/config.hpp"
#include "r3/config/tune_config.hpp"
#include "r3/record/call.hpp"
#include "r3/version.hpp"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  r3::capture::CaptureInfo info;
  info.device.backend = "host";
  {
    auto writer = r3::capture::CaptureWriter::create(argv[1], info);
    std::string_view text = "consumer";
    r3::capture::Kernel kernel;
    kernel.name = "consumer_kernel";
    kernel.images["source"] = writer.put_content(std::as_bytes(std::span(text)));
    writer.add_kernel(kernel);
  }
  auto reader = r3::capture::CaptureReader::open(argv[1]);
  std::cout << "r3 " << r3::version_string() << " (R3_VERSION_STRING " << R3_VERSION_STRING
            << "): " << reader.kernels().at(0).name << "\n";
  int calls = 0;
  r3::record::call(
      "consumer_kernel", [](r3::record::Call&) {}, [&] { ++calls; });
  const r3::config::TuneConfig tune =
      r3::config::parse_tune_config("capture: a.h5\nkernels: [consumer_kernel]\n", "tune.yaml");
  return reader.kernels().size() == 1 && calls == 1 && tune.kernels.size() == 1 ? 0 : 1;
}
