// The CUDA recorder's reading of code images: the data objects of an ELF64 image (this test
// binary stands in for a cubin: both keep their variables as STT_OBJECT symbols) and the PTX
// of the fat binary nvcc put into examples/cuda/heat.cu's executable.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

#include "code_images.hpp"
#include "r3/error.hpp"

// A variable of this program, found in its own symbol table below.
extern "C" int r3_test_elf_object_marker[7];
int r3_test_elf_object_marker[7] = {1, 2, 3, 4, 5, 6, 7};

namespace r3::record::cuda {
namespace {

std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars{std::istreambuf_iterator<char>(in), {}};
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

// The fat binary in an executable: nvcc puts it in .nv_fatbin, which begins with its magic.
const std::byte* fatbin_in(const std::vector<std::byte>& file) {
  const std::uint32_t magic = 0xba55ed50;
  for (std::size_t at = 0; at + 16 <= file.size(); at += 8)
    if (std::memcmp(file.data() + at, &magic, 4) == 0) return file.data() + at;
  return nullptr;
}

TEST(CudaCodeImages, ElfObjectsAreTheProgramsVariablesWithTheirSizes) {
  const std::vector<std::byte> self = read_file("/proc/self/exe");
  ASSERT_TRUE(is_elf64(self));
  const std::vector<ElfObject> objects = elf_objects(self);
  auto marker = std::find_if(objects.begin(), objects.end(), [](const ElfObject& o) {
    return o.name == "r3_test_elf_object_marker";
  });
  ASSERT_NE(marker, objects.end()) << objects.size() << " objects, none the marker";
  EXPECT_EQ(marker->size, sizeof(r3_test_elf_object_marker));
  EXPECT_EQ(std::count_if(objects.begin(), objects.end(),
                          [](const ElfObject& o) { return o.name == "main"; }),
            0)
      << "functions are not data objects";
}

TEST(CudaCodeImages, DamagedOrForeignElfIsRefused) {
  std::vector<std::byte> self = read_file("/proc/self/exe");
  self.resize(sizeof(std::uint64_t) * 8);  // the ELF header only: the sections lie past the end
  try {
    elf_objects(self);
    FAIL() << "a truncated image was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("runs past its end"), std::string::npos) << e.what();
  }
  const std::vector<std::byte> text(100, std::byte{'x'});
  EXPECT_FALSE(is_elf64(text));
  EXPECT_THROW(elf_objects(text), Error);
}

TEST(CudaCodeImages, PtxOfTheExamplesFatBinaryNamesItsKernels) {
  const std::vector<std::byte> file = read_file(R3_TEST_CUDA_HEAT);
  const std::byte* fatbin = fatbin_in(file);
  ASSERT_NE(fatbin, nullptr) << "no fat binary in " << R3_TEST_CUDA_HEAT;
  EXPECT_EQ(find_fatbin(fatbin), fatbin);

  // The runtime registers it through a wrapper, which is how the recorder sees it.
  struct {
    std::uint32_t magic = 0x466243b1, version = 1;
    const void* data;
    const void* unused = nullptr;
  } wrapper{.data = fatbin};
  EXPECT_EQ(find_fatbin(&wrapper), fatbin);
  const std::uint64_t not_code[4] = {0x7f454c46, 0, 0, 0};
  EXPECT_EQ(find_fatbin(not_code), nullptr);

  const std::vector<PtxEntry> entries = fatbin_ptx_entries(fatbin);
  ASSERT_FALSE(entries.empty()) << "nvcc keeps the PTX of each compute_XX it compiled for";
  for (const PtxEntry& entry : entries) {
    if (entry.compression == PtxEntry::Compression::zstd && !R3_TEST_HAVE_ZSTD) {
      EXPECT_THROW(ptx_text(entry), Error);
      continue;
    }
    const std::string text = ptx_text(entry);
    EXPECT_LE(text.size(), entry.text_size);
    EXPECT_NE(text.find(".target sm_" + std::to_string(entry.architecture)), std::string::npos)
        << text.substr(0, 300);
    EXPECT_TRUE(ptx_defines_entry(text, "_Z9heat_stepPKfPfif"));
    EXPECT_TRUE(ptx_defines_entry(text, "_Z10heat_totalPKfiPd"));
    EXPECT_FALSE(ptx_defines_entry(text, "_Z9heat_step")) << "a prefix is not the kernel";
    EXPECT_FALSE(ptx_defines_entry(text, "no_such_kernel"));
  }
}

TEST(CudaCodeImages, ADamagedFatBinaryIsRefused) {
  const std::vector<std::byte> file = read_file(R3_TEST_CUDA_HEAT);
  const std::byte* fatbin = fatbin_in(file);
  ASSERT_NE(fatbin, nullptr);
  const std::size_t at = fatbin - file.data();
  std::vector<std::byte> damaged = file;
  // The first entry claims a payload far longer than the fat binary.
  const std::uint64_t huge = 1ull << 30;
  std::memcpy(damaged.data() + at + 16 + 8, &huge, sizeof huge);
  try {
    fatbin_ptx_entries(damaged.data() + at);
    FAIL() << "a damaged fat binary was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fat binary"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace r3::record::cuda

namespace r3::record::cuda {
namespace {

TEST(CudaKernelSignature, ParameterTypesOfDemangledNames) {
  EXPECT_EQ(parameter_types("heat_step(float const*, float*, int, float)"),
            (std::vector<std::string>{"float const*", "float*", "int", "float"}));
  EXPECT_EQ(parameter_types("void ns::scale<float, (int)4>(Table<int, 2>, float*)"),
            (std::vector<std::string>{"Table<int, 2>", "float*"}));
  EXPECT_EQ(parameter_types("compute_flux(Fields)"), (std::vector<std::string>{"Fields"}));
  EXPECT_TRUE(parameter_types("kernel()").empty());
  EXPECT_TRUE(parameter_types("kernel_without_list").empty());
  EXPECT_TRUE(parameter_types("").empty());
}

TEST(CudaKernelSignature, ElementTypeOfWhatAParameterPointsTo) {
  using capture::ElementType;
  EXPECT_EQ(pointee_element_type("float const*"), ElementType::f32);
  EXPECT_EQ(pointee_element_type("double*"), ElementType::f64);
  EXPECT_EQ(pointee_element_type("int const* __restrict__"), ElementType::i32);
  EXPECT_EQ(pointee_element_type("unsigned long long*"), ElementType::u64);
  EXPECT_EQ(pointee_element_type("float const* const*"), ElementType::u64) << "a pointer table";
  EXPECT_EQ(pointee_element_type("__half*"), ElementType::f16);
  EXPECT_EQ(pointee_element_type("float"), ElementType::unknown) << "not a pointer";
  EXPECT_EQ(pointee_element_type("Fields*"), ElementType::unknown);
  // Vector types are compared per component.
  EXPECT_EQ(pointee_element_type("float2*"), ElementType::f32);
  EXPECT_EQ(pointee_element_type("float4 const*"), ElementType::f32);
  EXPECT_EQ(pointee_element_type("double2*"), ElementType::f64);
  EXPECT_EQ(pointee_element_type("int4*"), ElementType::i32);
  EXPECT_EQ(pointee_element_type("uint2*"), ElementType::u32);
  EXPECT_EQ(pointee_element_type("uchar4*"), ElementType::u8);
  EXPECT_EQ(pointee_element_type("__half2*"), ElementType::f16);
  EXPECT_EQ(pointee_element_type("float8*"), ElementType::unknown);
  EXPECT_EQ(pointee_element_type("void*"), ElementType::unknown);
}

TEST(CudaKernelSignature, ModuleVariablesOfPtxText) {
  const std::string ptx =
      ".version 9.0\n.target sm_90\n.address_size 64\n\n"
      ".const .align 4 .f32 scale;\n"
      ".visible .global .align 8 .u64 tracers[2];\n"
      ".global .align 4 .b8 $str[7] = {104, 105, 0};\n"
      ".visible .entry k(\n.param .u64 k_param_0\n)\n{\n"
      "\t.reg .f32 %f<3>;\n\t.local .align 4 .b8 __local_depot[8];\n}\n";
  EXPECT_EQ(ptx_variables(ptx), (std::vector<std::string>{"scale", "tracers"}));
  EXPECT_TRUE(ptx_variables(".version 9.0\n.visible .entry k()\n{\n}\n").empty());
}

}  // namespace
}  // namespace r3::record::cuda
