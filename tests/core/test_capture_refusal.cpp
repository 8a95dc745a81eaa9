// The capture reader refuses what it does not understand, each time with an error that names the
// file and the problem, never a crash.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <random>

#include "r3/capture.hpp"
#include "r3/error.hpp"
#include "support/random_capture.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using namespace r3::capture;
using r3::test::TempDir;

// Expects open (and, if open succeeds, reading every content) to throw an r3 error of type E
// whose message names the file and contains `needle`.
template <class E = r3::FormatError>
void expect_refused(const fs::path& path, const std::string& needle) {
  try {
    CaptureReader reader = CaptureReader::open(path);
    reader.verify_contents();
    FAIL() << "accepted " << path << " (expected an error containing '" << needle << "')";
  } catch (const E& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(path.string()), std::string::npos) << "file not named: " << what;
    EXPECT_NE(what.find(needle), std::string::npos) << "expected '" << needle << "' in: " << what;
  }
}

fs::path small_capture(const TempDir& dir, const std::string& name = "c.h5",
                       std::uint64_t seed = 21) {
  r3::test::CaptureShape shape{2, 2, 2};
  shape.sizes = {16, 4096, 200000};
  write_capture(dir / name, r3::test::random_capture(seed, shape));
  return dir / name;
}

// Opens `path` read-write with the raw HDF5 API and hands the file to `edit`.
void edit_hdf5(const fs::path& path, const std::function<void(hid_t)>& edit) {
  hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  edit(file);
  H5Fclose(file);
}

void set_int_attribute(hid_t object, const char* name, long long value) {
  if (H5Aexists(object, name) > 0) H5Adelete(object, name);
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attribute = H5Acreate2(object, name, H5T_NATIVE_LLONG, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attribute, H5T_NATIVE_LLONG, &value);
  H5Aclose(attribute);
  H5Sclose(space);
}

void set_string_attribute(hid_t object, const char* name, const std::string& value) {
  if (H5Aexists(object, name) > 0) H5Adelete(object, name);
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, value.size());
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attribute = H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attribute, type, value.data());
  H5Aclose(attribute);
  H5Sclose(space);
  H5Tclose(type);
}

std::string first_content_of_size(const fs::path& path, std::uint64_t size) {
  CaptureReader reader = CaptureReader::open(path);
  for (const Kernel& kernel : reader.kernels()) {
    for (const Launch& launch : kernel.launches) {
      for (const Region& region : launch.prologue) {
        if (region.size == size) return region.content.hex();
      }
    }
  }
  return "";
}

TEST(CaptureRefusal, MissingFile) {
  TempDir dir;
  expect_refused<r3::IoError>(dir / "absent.h5", "the capture does not exist");
}

TEST(CaptureRefusal, Directory) {
  TempDir dir;
  expect_refused<r3::IoError>(dir.path(), "directory");
}

TEST(CaptureRefusal, NotAnHdf5File) {
  TempDir dir;
  std::ofstream(dir / "text.h5") << "capture: this is YAML, not HDF5\n";
  expect_refused(dir / "text.h5", "not an HDF5 file");
  std::ofstream(dir / "empty.h5");
  expect_refused(dir / "empty.h5", "not an HDF5 file");
}

TEST(CaptureRefusal, ForeignHdf5File) {
  TempDir dir;
  fs::path path = dir / "foreign.h5";
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t dims[1] = {16};
  hid_t space = H5Screate_simple(1, dims, nullptr);
  hid_t dataset = H5Dcreate2(file, "temperature", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT,
                             H5P_DEFAULT, H5P_DEFAULT);
  H5Dclose(dataset);
  H5Sclose(space);
  H5Fclose(file);
  expect_refused(path, "not an r3 capture");
}

TEST(CaptureRefusal, WrongFormatName) {
  TempDir dir;
  fs::path path = small_capture(dir);
  edit_hdf5(path, [](hid_t file) { set_string_attribute(file, "format", "r3-run"); });
  expect_refused(path, "its format is 'r3-run'");
}

TEST(CaptureRefusal, NewerVersion) {
  TempDir dir;
  fs::path path = small_capture(dir);
  edit_hdf5(path, [](hid_t file) { set_int_attribute(file, "version", kFormatVersion + 1); });
  expect_refused(path, "newer r3");
}

TEST(CaptureRefusal, InvalidVersion) {
  TempDir dir;
  fs::path path = small_capture(dir);
  edit_hdf5(path, [](hid_t file) { set_int_attribute(file, "version", 0); });
  expect_refused(path, "invalid capture format version 0");
  edit_hdf5(path, [](hid_t file) { set_string_attribute(file, "version", "one"); });
  expect_refused(path, "'version' is not a number");
}

TEST(CaptureRefusal, TruncatedCopies) {
  TempDir dir;
  fs::path original = small_capture(dir);
  std::uintmax_t size = fs::file_size(original);
  for (double fraction : {0.001, 0.1, 0.5, 0.9, 0.999}) {
    fs::path copy = dir / ("truncated-" + std::to_string(fraction) + ".h5");
    fs::copy_file(original, copy);
    fs::resize_file(copy, static_cast<std::uintmax_t>(static_cast<double>(size) * fraction));
    try {
      CaptureReader reader = CaptureReader::open(copy);
      reader.verify_contents();
      FAIL() << "accepted a copy truncated to " << fraction;
    } catch (const r3::Error& e) {
      EXPECT_NE(std::string(e.what()).find(copy.string()), std::string::npos) << e.what();
    }
  }
  fs::path copy = dir / "half.h5";
  fs::copy_file(original, copy);
  fs::resize_file(copy, size / 2);
  expect_refused(copy, "truncated");
}

TEST(CaptureRefusal, DamagedContentBytes) {
  TempDir dir;
  fs::path path = small_capture(dir);
  std::string hex = first_content_of_size(path, 200000);
  ASSERT_FALSE(hex.empty());
  // Where HDF5 stored that content's (only) chunk.
  haddr_t address = 0;
  edit_hdf5(path, [&](hid_t file) {
    hid_t dataset = H5Dopen2(file, ("/contents/" + hex).c_str(), H5P_DEFAULT);
    hsize_t offset[1];
    unsigned mask = 0;
    hsize_t chunk_size = 0;
    hid_t space = H5Dget_space(dataset);
    ASSERT_GE(H5Dget_chunk_info(dataset, space, 0, offset, &mask, &address, &chunk_size), 0);
    H5Sclose(space);
    H5Dclose(dataset);
  });
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(static_cast<std::streamoff>(address + 1000));
    char byte = 0;
    file.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x5a);
    file.seekp(static_cast<std::streamoff>(address + 1000));
    file.write(&byte, 1);
  }
  CaptureReader reader = CaptureReader::open(path);  // metadata is intact
  auto content = *r3::Hash128::from_hex(hex);
  try {
    reader.read_content(content);
    FAIL() << "damaged content read without complaint";
  } catch (const r3::FormatError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("content " + hex + " is damaged"), std::string::npos) << what;
  }
  expect_refused(path, "is damaged");
}

TEST(CaptureRefusal, DanglingContentReference) {
  TempDir dir;
  fs::path path = small_capture(dir);
  std::string hex = first_content_of_size(path, 4096);
  ASSERT_FALSE(hex.empty());
  edit_hdf5(path, [&](hid_t file) {
    ASSERT_GE(H5Ldelete(file, ("/contents/" + hex).c_str(), H5P_DEFAULT), 0);
  });
  expect_refused(path, "dangling reference");
  expect_refused(path, hex);
}

TEST(CaptureRefusal, ContentOfTheWrongSize) {
  TempDir dir;
  fs::path path = small_capture(dir);
  std::string hex = first_content_of_size(path, 4096);
  edit_hdf5(path, [&](hid_t file) {
    std::string name = "/contents/" + hex;
    H5Ldelete(file, name.c_str(), H5P_DEFAULT);
    hsize_t dims[1] = {100};
    hid_t space = H5Screate_simple(1, dims, nullptr);
    hid_t dataset =
        H5Dcreate2(file, name.c_str(), H5T_STD_U8LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(dataset);
    H5Sclose(space);
  });
  expect_refused(path, "holds 100 bytes");
}

TEST(CaptureRefusal, MissingLaunchAttributeNamesItsPath) {
  TempDir dir;
  fs::path path = small_capture(dir);
  edit_hdf5(path, [](hid_t file) {
    hid_t launch = H5Gopen2(file, "/kernels/1/launches/0", H5P_DEFAULT);
    H5Adelete(launch, "grid");
    H5Gclose(launch);
  });
  expect_refused(path, "/kernels/1/launches/0: attribute 'grid' is missing");
}

TEST(CaptureRefusal, UnexpectedEntriesAndGaps) {
  TempDir dir;
  fs::path path = small_capture(dir);
  edit_hdf5(path, [](hid_t file) {
    hid_t group = H5Gcreate2(file, "/kernels/extra", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Gclose(group);
  });
  expect_refused(path, "unexpected entry 'extra'");

  fs::path gap = small_capture(dir, "gap.h5");
  edit_hdf5(gap, [](hid_t file) { H5Ldelete(file, "/kernels/0/launches/0", H5P_DEFAULT); });
  expect_refused(gap, "/kernels/0/launches: unexpected entry '1'");
}

TEST(CaptureRefusal, MissingTableColumn) {
  TempDir dir;
  fs::path path = small_capture(dir);
  edit_hdf5(path, [](hid_t file) {
    H5Ldelete(file, "/kernels/0/params", H5P_DEFAULT);
    hsize_t dims[1] = {1};
    hid_t type = H5Tcreate(H5T_COMPOUND, 8);
    H5Tinsert(type, "offset", 0, H5T_NATIVE_UINT64);
    hid_t space = H5Screate_simple(1, dims, nullptr);
    hid_t dataset =
        H5Dcreate2(file, "/kernels/0/params", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(dataset);
    H5Sclose(space);
    H5Tclose(type);
  });
  expect_refused(path, "/kernels/0/params has no column 'size'");
}

}  // namespace
