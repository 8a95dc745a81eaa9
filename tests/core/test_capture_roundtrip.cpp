#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <sstream>

#include "r3/capture.hpp"
#include "r3/error.hpp"
#include "r3/inspect.hpp"
#include "support/random_capture.hpp"
#include "support/temp_dir.hpp"

namespace {

using namespace r3::capture;
using r3::test::ExpectedCapture;
using r3::test::TempDir;

void expect_equal_to_model(const CaptureReader& reader, const ExpectedCapture& expected) {
  EXPECT_EQ(reader.info(), expected.info);
  ASSERT_EQ(reader.kernels().size(), expected.kernels.size());
  for (std::size_t k = 0; k < expected.kernels.size(); ++k) {
    EXPECT_EQ(reader.kernels()[k], expected.kernels[k]) << "kernel " << k;
  }
  for (const auto& [hash, bytes] : expected.contents) {
    ASSERT_TRUE(reader.has_content(hash)) << hash.hex();
    EXPECT_EQ(reader.content_size(hash), bytes.size());
    EXPECT_TRUE(reader.read_content(hash) == bytes) << "content " << hash.hex() << " differs";
  }
}

// Writes `expected` in a child process that then dies with the writer still open (no close, no
// destructors), as an application that crashes while being recorded.
void write_and_die(const std::filesystem::path& path, const ExpectedCapture& expected) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      CaptureWriter writer = CaptureWriter::create(path, expected.info);
      r3::test::fill_capture(writer, expected);
      _exit(0);
    } catch (...) {
      _exit(1);
    }
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the writing child failed";
}

class RandomRoundTrip : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(RandomRoundTrip, ReadsBackBitwiseEqual) {
  TempDir dir;
  ExpectedCapture expected = r3::test::random_capture(GetParam(), r3::test::CaptureShape{});
  write_capture(dir / "c.h5", expected);
  CaptureReader reader = CaptureReader::open(dir / "c.h5");
  EXPECT_EQ(reader.version(), kFormatVersion);
  EXPECT_TRUE(reader.complete());
  expect_equal_to_model(reader, expected);
  EXPECT_NO_THROW(reader.verify_contents());
}

INSTANTIATE_TEST_SUITE_P(Seeds, RandomRoundTrip, ::testing::Values(1, 2, 3, 42, 1234567));

TEST(CaptureRoundTrip, RegionSizesFromZeroTo64MiB) {
  TempDir dir;
  r3::test::CaptureShape shape;
  shape.kernels = 1;
  shape.launches_per_kernel = 1;
  shape.regions_per_launch = 0;
  ExpectedCapture expected = r3::test::random_capture(99, shape);
  std::mt19937_64 rng(5);
  Launch& launch = expected.kernels[0].launches[0];
  int index = 0;
  for (std::uint64_t size :
       {0ull, 1ull, 4095ull, 4096ull, 4097ull, (1ull << 20) + 1, 64ull << 20}) {
    std::vector<std::byte> bytes = r3::test::random_bytes(rng, size);
    Region region;
    region.name = "r" + std::to_string(index);
    region.address = 0x1000ull * static_cast<std::uint64_t>(++index);
    region.size = size;
    region.element_type = ElementType::u8;
    region.content = r3::hash_bytes(bytes);
    launch.prologue.push_back(region);
    expected.contents.emplace(region.content, std::move(bytes));
  }
  write_capture(dir / "sizes.h5", expected);
  CaptureReader reader = CaptureReader::open(dir / "sizes.h5");
  expect_equal_to_model(reader, expected);
}

TEST(CaptureRoundTrip, EmptyCaptureHasNoKernels) {
  TempDir dir;
  ExpectedCapture expected;
  expected.info.device.backend = "host";
  { CaptureWriter writer = CaptureWriter::create(dir / "empty.h5", expected.info); }
  CaptureReader reader = CaptureReader::open(dir / "empty.h5");
  EXPECT_TRUE(reader.kernels().empty());
  EXPECT_FALSE(reader.info().created.empty());  // filled in by the writer
  EXPECT_FALSE(reader.info().host.empty());
  EXPECT_EQ(reader.stats().launches, 0u);
}

// A capture of `copies` launches that all hold the same `bytes` (prologue and epilogue).
std::uintmax_t capture_size_with_shared_content(const std::filesystem::path& path,
                                                const std::vector<std::vector<std::byte>>& distinct,
                                                int copies) {
  CaptureInfo info;
  info.device.backend = "host";
  CaptureWriter writer = CaptureWriter::create(path, info);
  std::vector<r3::Hash128> hashes;
  for (const auto& bytes : distinct) hashes.push_back(writer.put_content(bytes));
  Kernel kernel;
  kernel.name = "k";
  std::size_t id = writer.add_kernel(kernel);
  for (int i = 0; i < copies; ++i) {
    Launch launch;
    launch.sequence = static_cast<std::uint64_t>(i);
    for (std::size_t d = 0; d < distinct.size(); ++d) {
      Region region{"buf" + std::to_string(d), RegionKind::allocation, 0x10000ull * (d + 1),
                    distinct[d].size(),        ElementType::f32,       hashes[d]};
      launch.prologue.push_back(region);
      launch.epilogue.push_back(region);
    }
    writer.add_launch(id, launch);
  }
  writer.close();
  return std::filesystem::file_size(path);
}

TEST(CaptureDeduplication, SharedContentIsStoredOnce) {
  TempDir dir;
  std::mt19937_64 rng(3);
  const std::uint64_t four_mib = 4ull << 20;
  std::vector<std::byte> a = r3::test::random_bytes(rng, four_mib);
  std::vector<std::byte> b = r3::test::random_bytes(rng, four_mib);

  std::uintmax_t one_launch = capture_size_with_shared_content(dir / "one.h5", {a}, 1);
  std::uintmax_t ten_launches = capture_size_with_shared_content(dir / "ten.h5", {a}, 10);
  std::uintmax_t two_contents = capture_size_with_shared_content(dir / "two.h5", {a, b}, 1);

  // Random bytes do not compress: one copy costs at least its size.
  EXPECT_GE(one_launch, four_mib);
  // Nine more launches referring to the same 4 MiB add only their metadata.
  EXPECT_LT(ten_launches - one_launch, 256u << 10) << one_launch << " -> " << ten_launches;
  // A second distinct content adds one copy.
  EXPECT_GE(two_contents - one_launch, four_mib);
  EXPECT_LT(two_contents - one_launch, four_mib + (256u << 10));

  CaptureReader reader = CaptureReader::open(dir / "ten.h5");
  CaptureStats stats = reader.stats();
  EXPECT_EQ(stats.launches, 10u);
  EXPECT_EQ(stats.regions, 20u);
  EXPECT_EQ(stats.referenced_bytes, 20 * four_mib);
  EXPECT_EQ(stats.unique_bytes, four_mib);
}

TEST(CaptureDeduplication, PutContentReturnsTheSameHashOnce) {
  TempDir dir;
  CaptureWriter writer = CaptureWriter::create(dir / "d.h5", CaptureInfo{});
  std::vector<std::byte> bytes(1000, std::byte{7});
  r3::Hash128 first = writer.put_content(bytes);
  EXPECT_TRUE(writer.has_content(first));
  EXPECT_EQ(writer.put_content(bytes), first);
  EXPECT_EQ(first, r3::hash_bytes(bytes));
}

TEST(CaptureCompression, RepetitiveContentIsStoredSmall) {
  TempDir dir;
  std::vector<std::byte> zeros(16u << 20, std::byte{0});
  capture_size_with_shared_content(dir / "z.h5", {zeros}, 1);
  CaptureStats stats = CaptureReader::open(dir / "z.h5").stats();
  EXPECT_EQ(stats.unique_bytes, zeros.size());
  EXPECT_LT(stats.stored_bytes, 1u << 20);
  EXPECT_LT(stats.file_bytes, 2u << 20);
}

TEST(CaptureWriterChecks, RefusesLaunchesReferringToContentNotPut) {
  TempDir dir;
  CaptureWriter writer = CaptureWriter::create(dir / "w.h5", CaptureInfo{});
  Kernel kernel;
  kernel.name = "k";
  std::size_t id = writer.add_kernel(kernel);
  Launch launch;
  launch.prologue.push_back(Region{"x", RegionKind::allocation, 0x1000, 4, ElementType::f32,
                                   r3::hash_string("never stored")});
  EXPECT_THROW(writer.add_launch(id, launch), r3::Error);
  EXPECT_THROW(writer.add_launch(id + 1, Launch{}), r3::Error);
}

TEST(CaptureWriterChecks, RefusesRegionSizeThatDiffersFromContent) {
  TempDir dir;
  CaptureWriter writer = CaptureWriter::create(dir / "w.h5", CaptureInfo{});
  std::vector<std::byte> bytes(16);
  r3::Hash128 content = writer.put_content(bytes);
  Kernel kernel;
  kernel.name = "k";
  std::size_t id = writer.add_kernel(kernel);
  Launch launch;
  launch.prologue.push_back(
      Region{"x", RegionKind::allocation, 0x1000, 32, ElementType::f32, content});
  try {
    writer.add_launch(id, launch);
    FAIL() << "size mismatch accepted";
  } catch (const r3::Error& e) {
    EXPECT_NE(std::string(e.what()).find("size 32"), std::string::npos) << e.what();
  }
}

TEST(CaptureWriterChecks, RefusesBadKernels) {
  TempDir dir;
  CaptureWriter writer = CaptureWriter::create(dir / "w.h5", CaptureInfo{});
  Kernel unnamed;
  EXPECT_THROW(writer.add_kernel(unnamed), r3::Error);
  Kernel with_launch;
  with_launch.name = "k";
  with_launch.launches.emplace_back();
  EXPECT_THROW(writer.add_kernel(with_launch), r3::Error);
  Kernel bad_image;
  bad_image.name = "k";
  bad_image.images["PTX/x"] = writer.put_content(std::vector<std::byte>(4));
  EXPECT_THROW(writer.add_kernel(bad_image), r3::Error);
  Kernel missing_image;
  missing_image.name = "k";
  missing_image.images["ptx"] = r3::hash_string("absent");
  EXPECT_THROW(writer.add_kernel(missing_image), r3::Error);
  Kernel bad_choice;
  bad_choice.name = "k";
  bad_choice.kokkos_choices["tile=0"] = {1};
  EXPECT_THROW(writer.add_kernel(bad_choice), r3::Error);
  bad_choice.kokkos_choices = {{"tile_size_0", {}}};
  EXPECT_THROW(writer.add_kernel(bad_choice), r3::Error);
}

TEST(CaptureKokkosChoices, TextReadsBackAndDamagedTextIsRefused) {
  const std::map<std::string, std::vector<std::int64_t>> choices{{"tile_size_0", {1, 2, 4, 64}},
                                                                 {"team_size", {-1, 1024}}};
  const std::string text = kokkos_choices_text(choices);
  EXPECT_EQ(text, "team_size=-1,1024;tile_size_0=1,2,4,64");
  EXPECT_EQ(parse_kokkos_choices(text, "here"), choices);
  EXPECT_TRUE(parse_kokkos_choices("", "here").empty());
  for (const char* bad :
       {"tile_size_0", "=1,2", "tile_size_0=", "tile_size_0=1,x", "a=1;;b=2", "a=1,,2", "a=1.5"}) {
    try {
      parse_kokkos_choices(bad, "/kernels/0");
      ADD_FAILURE() << "'" << bad << "' was read";
    } catch (const r3::FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("/kernels/0"), std::string::npos) << e.what();
    }
  }
}

// An application that dies while recording keeps the launches flushed before.
TEST(CaptureWriterChecks, LaunchesFlushedBeforeADeathAreReadable) {
  TempDir dir;
  std::filesystem::path path = dir / "dying.h5";
  ExpectedCapture expected = r3::test::random_capture(8, r3::test::CaptureShape{1, 2, 2});
  write_and_die(path, expected);
  CaptureReader reader = CaptureReader::open(path);
  EXPECT_FALSE(reader.complete());
  expect_equal_to_model(reader, expected);
}

TEST(CaptureKernelLookup, ByNameDemangledBaseNameLabelAndIndex) {
  TempDir dir;
  ExpectedCapture expected = r3::test::random_capture(5, r3::test::CaptureShape{3, 1, 1});
  write_capture(dir / "k.h5", expected);
  CaptureReader reader = CaptureReader::open(dir / "k.h5");
  EXPECT_EQ(reader.find_kernel("_Z6kernel0PfPKfi"), 0u);
  EXPECT_EQ(reader.find_kernel("kernel2(float*, float const*, int)"), 2u);
  EXPECT_EQ(reader.find_kernel("kernel2"), 2u);
  EXPECT_EQ(reader.find_kernel("Label::kernel1"), 1u);
  EXPECT_EQ(reader.find_kernel("#1"), 1u);
  EXPECT_FALSE(reader.find_kernel("#3").has_value());
  EXPECT_FALSE(reader.find_kernel("kernel9").has_value());
  EXPECT_EQ(&reader.kernel("kernel0"), &reader.kernels()[0]);
}

TEST(CaptureKernelLookup, UnknownKernelListsWhatTheCaptureHolds) {
  TempDir dir;
  ExpectedCapture expected = r3::test::random_capture(5, r3::test::CaptureShape{2, 1, 1});
  write_capture(dir / "k.h5", expected);
  CaptureReader reader = CaptureReader::open(dir / "k.h5");
  try {
    reader.kernel("saxpy");
    FAIL() << "unknown kernel accepted";
  } catch (const r3::UnknownKernelError& e) {
    EXPECT_EQ(e.context().kernel, "saxpy");
    EXPECT_EQ(e.context().file, (dir / "k.h5").string());
    std::string what = e.what();
    EXPECT_NE(what.find("_Z6kernel0PfPKfi"), std::string::npos) << what;
    EXPECT_NE(what.find("_Z6kernel1PfPKfi"), std::string::npos) << what;
  }
}

TEST(CaptureKernelLookup, AmbiguousNameAsksForAnIndex) {
  TempDir dir;
  CaptureWriter writer = CaptureWriter::create(dir / "a.h5", CaptureInfo{});
  Kernel kernel;
  kernel.name = "_Z4stepv";
  kernel.demangled_name = "step()";
  writer.add_kernel(kernel);
  writer.add_kernel(kernel);  // same kernel in two modules
  writer.close();
  CaptureReader reader = CaptureReader::open(dir / "a.h5");
  try {
    reader.find_kernel("step");
    FAIL() << "ambiguous name accepted";
  } catch (const r3::UnknownKernelError& e) {
    EXPECT_NE(std::string(e.what()).find("#0, #1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(reader.find_kernel("#1"), 1u);
}

TEST(CaptureWriterChecks, RefusesParametersOutsideTheArgumentBytes) {
  TempDir dir;
  CaptureWriter writer = CaptureWriter::create(dir / "p.h5", CaptureInfo{});
  Kernel kernel;
  kernel.name = "k";
  kernel.params = {{0, 8, true, "float*"}, {8, 4, false, "int"}};
  std::size_t id = writer.add_kernel(kernel);
  Launch launch;
  launch.args.resize(10);  // the int at offset 8 needs 12 bytes
  try {
    writer.add_launch(id, launch);
    FAIL() << "accepted";
  } catch (const r3::Error& e) {
    EXPECT_NE(std::string(e.what()).find("parameter at offset 8 (4 bytes) lies outside the 10"),
              std::string::npos)
        << e.what();
  }
  launch.args.resize(12);
  EXPECT_EQ(writer.add_launch(id, launch), 0u);  // the refused launch left nothing behind
}

TEST(CaptureWriterChecks, RefusesNulCharactersThatWouldNotReadBack) {
  TempDir dir;
  CaptureWriter writer = CaptureWriter::create(dir / "n.h5", CaptureInfo{});
  Kernel kernel;
  kernel.name = std::string("k\0hidden", 8);
  EXPECT_THROW(writer.add_kernel(kernel), r3::Error);
  CaptureInfo info;
  info.command_line = std::string("./app\0", 6);
  EXPECT_THROW(CaptureWriter::create(dir / "m.h5", info), r3::Error);
}

TEST(CaptureWriterChecks, MoveAssignmentClosesTheFileItReplaces) {
  TempDir dir;
  CaptureWriter writer = CaptureWriter::create(dir / "first.h5", CaptureInfo{});
  writer = CaptureWriter::create(dir / "second.h5", CaptureInfo{});
  EXPECT_TRUE(CaptureReader::open(dir / "first.h5").complete());
  writer.close();
  EXPECT_TRUE(CaptureReader::open(dir / "second.h5").complete());
  EXPECT_THROW(writer.put_content(std::vector<std::byte>(1)), r3::Error);  // closed
}

// A launch group the writer had begun when the application died (no checksum yet).
void add_unfinished_launch(const std::filesystem::path& path, const std::string& launches) {
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  std::size_t next = 0;
  while (H5Lexists(file, (launches + "/" + std::to_string(next)).c_str(), H5P_DEFAULT) > 0) ++next;
  hid_t group = H5Gcreate2(file, (launches + "/" + std::to_string(next)).c_str(), H5P_DEFAULT,
                           H5P_DEFAULT, H5P_DEFAULT);
  H5Gclose(group);
  H5Fclose(file);
}

TEST(CaptureRecovery, UnfinishedLastLaunchOfAnUnclosedCaptureIsLeftOutWithAWarning) {
  TempDir dir;
  std::filesystem::path path = dir / "dying.h5";
  ExpectedCapture expected = r3::test::random_capture(9, r3::test::CaptureShape{1, 2, 2});
  write_and_die(path, expected);
  add_unfinished_launch(path, "/kernels/0/launches");

  CaptureReader reader = CaptureReader::open(path);
  EXPECT_FALSE(reader.complete());
  expect_equal_to_model(reader, expected);  // both finished launches, nothing else
  ASSERT_EQ(reader.warnings().size(), 1u);
  EXPECT_NE(reader.warnings()[0].find("/kernels/0/launches/2 was being written"), std::string::npos)
      << reader.warnings()[0];
}

TEST(CaptureRecovery, AClosedCaptureWithAnUnfinishedLaunchIsDamaged) {
  TempDir dir;
  ExpectedCapture expected = r3::test::random_capture(9, r3::test::CaptureShape{1, 2, 2});
  write_capture(dir / "closed.h5", expected);
  add_unfinished_launch(dir / "closed.h5", "/kernels/0/launches");
  EXPECT_THROW(CaptureReader::open(dir / "closed.h5"), r3::FormatError);
}

TEST(CaptureKernelLookup, TemplateAndNamespacedKernelsByTheirBaseName) {
  TempDir dir;
  CaptureWriter writer = CaptureWriter::create(dir / "t.h5", CaptureInfo{});
  Kernel kernel;
  kernel.name = "_ZN4heat4stepIfEEvPT_i";
  kernel.demangled_name = "void heat::step<float>(float*, int)";
  writer.add_kernel(kernel);
  Kernel other;
  other.name = "_Z3axpyPfi";
  other.demangled_name = "axpy(float*, int)";
  writer.add_kernel(other);
  writer.close();
  CaptureReader reader = CaptureReader::open(dir / "t.h5");
  EXPECT_EQ(reader.find_kernel("heat::step"), 0u);
  EXPECT_EQ(reader.find_kernel("step"), 0u);
  EXPECT_EQ(reader.find_kernel("axpy"), 1u);
  EXPECT_FALSE(reader.find_kernel("").has_value());
  EXPECT_FALSE(reader.find_kernel("void").has_value());
}

}  // namespace

// The CUDA recorder learns a launch's time in the application after writing the launch.
TEST(CaptureWriterChecks, ApplicationTimeSetAfterTheLaunchReadsBackWithAValidChecksum) {
  TempDir dir;
  Launch launch;
  launch.sequence = 7;
  launch.args = {std::byte{1}, std::byte{2}};
  {
    CaptureWriter writer = CaptureWriter::create(dir / "t.h5", CaptureInfo{});
    Kernel kernel;
    kernel.name = "k";
    const std::size_t id = writer.add_kernel(kernel);
    writer.add_launch(id, launch);
    launch.app_time_us = 123.5;
    writer.set_app_time(id, 0, launch);
    EXPECT_THROW(writer.set_app_time(id, 1, launch), r3::Error) << "there is no launch 1";
    EXPECT_THROW(writer.set_app_time(id, 0, Launch{}), r3::Error) << "no time to set";
    writer.close();
  }
  CaptureReader reader = CaptureReader::open(dir / "t.h5");
  ASSERT_EQ(reader.kernels().at(0).launches.size(), 1u);
  EXPECT_EQ(reader.kernels()[0].launches[0], launch);
}

namespace {

// Template kernels are found by their instance ("MatrixMulCUDA<32>", qualified or not) as well
// as by their base name when only one instance was recorded.
TEST(CaptureKernelNames, TemplateInstancesAreFoundByTheirDemangledInstanceName) {
  EXPECT_EQ(instance_name("void MatrixMulCUDA<32>(float*, float*, float*, int, int)"),
            "MatrixMulCUDA<32>");
  EXPECT_EQ(instance_name("void ns::tile<float, 4>(float const*, float*)"), "ns::tile<float, 4>");
  EXPECT_EQ(instance_name("scale(float*, int)"), "scale");
  EXPECT_EQ(template_arguments("ns::tile<float, 4>"), (std::vector<std::string>{"float", "4"}));
  EXPECT_EQ(template_arguments("k<32u, std::pair<int, int>, (char)65>"),
            (std::vector<std::string>{"32u", "std::pair<int, int>", "(char)65"}));
  EXPECT_TRUE(template_arguments("scale").empty());
  TempDir dir;
  CaptureInfo info;
  info.device.backend = "cuda";
  {
    auto writer = CaptureWriter::create(dir / "t.h5", info);
    for (auto [mangled, demangled] :
         {std::pair{"_Z13MatrixMulCUDAILi32EEvPfS0_S0_ii",
                    "void MatrixMulCUDA<32>(float*, float*, float*, int, int)"},
          std::pair{"_ZN2ns4tileIfLi4EEEvPKfPf", "void ns::tile<float, 4>(float const*, float*)"},
          std::pair{"_ZN2ns4tileIfLi8EEEvPKfPf", "void ns::tile<float, 8>(float const*, float*)"}}) {
      Kernel k;
      k.name = mangled;
      k.demangled_name = demangled;
      writer.add_kernel(k);
    }
    writer.close();
  }
  auto capture = CaptureReader::open(dir / "t.h5");
  EXPECT_EQ(capture.find_kernel("MatrixMulCUDA<32>"), 0u);
  EXPECT_EQ(capture.find_kernel("MatrixMulCUDA"), 0u) << "the only instance, by its base name";
  EXPECT_EQ(capture.find_kernel("ns::tile<float, 8>"), 2u);
  EXPECT_EQ(capture.find_kernel("tile<float, 4>"), 1u);
  EXPECT_FALSE(capture.find_kernel("MatrixMulCUDA<16>"));
  EXPECT_THROW(capture.find_kernel("tile"), r3::UnknownKernelError) << "two instances: ambiguous";
}

}  // namespace

namespace {

// `r3 inspect --source`: regions named after what reaches them are listed with the source's
// parameter names beside the recorded ones; globals keep theirs.
TEST(CaptureInspect, RegionsAreShownByTheirSourceNamesWhenGiven) {
  TempDir dir;
  CaptureInfo info;
  info.device.backend = "cuda";
  CaptureWriter writer = CaptureWriter::create(dir / "c.h5", info);
  Kernel kernel;
  kernel.name = "_Z4stepPfS_i";
  kernel.demangled_name = "step(float*, float*, int)";
  kernel.params = {{0, 8, true, "float*"}, {8, 8, true, "float*"}, {16, 4, false, "int"}};
  const std::size_t id = writer.add_kernel(kernel);
  const std::vector<std::byte> bytes(16, std::byte{1});
  const r3::Hash128 content = writer.put_content(bytes);
  Launch launch;
  launch.args.resize(20);
  launch.prologue = {{"arg0", RegionKind::allocation, 0x1000, 16, ElementType::f32, content},
                     {"*(arg0+8)", RegionKind::allocation, 0x3000, 16, ElementType::unknown,
                      content},
                     {"table", RegionKind::global, 0x5000, 16, ElementType::unknown, content}};
  launch.epilogue = {{"arg1", RegionKind::allocation, 0x2000, 16, ElementType::f32, content}};
  writer.add_launch(id, launch);
  writer.close();
  CaptureReader reader = CaptureReader::open(dir / "c.h5");
  r3::InspectOptions options;
  options.list_regions = true;
  std::ostringstream plain;
  r3::inspect_capture(reader, options, plain);
  EXPECT_NE(plain.str().find("        arg1  0x"), std::string::npos) << plain.str();
  options.parameter_names[kernel.name] = {"in", "out", "n"};
  std::ostringstream named;
  r3::inspect_capture(reader, options, named);
  for (const char* line : {"        in (arg0)  0x", "        *(in+8) (*(arg0+8))  0x",
                           "        out (arg1)  0x", "        table  0x"})
    EXPECT_NE(named.str().find(line), std::string::npos) << line << " not in\n" << named.str();
}

}  // namespace
