// r3::run::ImageFile (src/core/rundb/image_file.hpp): an HDF5 file in memory, its bytes handed
// back at close, and its image kept for as long as HDF5 may still use it.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "image_file.hpp"
#include "r3/error.hpp"
#include "support/temp_dir.hpp"

namespace {

using r3::run::ImageFile;
using r3::test::TempDir;

// The bytes a file hands back at close open again as the same file; its image is freed once
// the file is closed and its ImageFile gone, or with an ImageFile gone unclosed.
TEST(ImageFile, AFileClosedHandsBackBytesThatOpenAsTheSameFile) {
  TempDir dir;
  r3::h5::Session session((dir / "memory.h5").string());
  ASSERT_EQ(ImageFile::images_alive(), 0u);
  std::vector<std::byte> bytes;
  {
    ImageFile file(dir / "memory.h5", {}, "a test file");
    r3::h5::write_uint_attribute(file.id(), "answer", 42);
    bytes = file.close();
    EXPECT_EQ(ImageFile::images_alive(), 1u) << "its ImageFile still holds it";
  }
  EXPECT_EQ(ImageFile::images_alive(), 0u);
  ASSERT_FALSE(bytes.empty());
  EXPECT_FALSE(std::filesystem::exists(dir / "memory.h5")) << "no backing store";
  {
    ImageFile file(dir / "memory.h5", bytes, "a test file");
    EXPECT_EQ(r3::h5::read_uint_attribute(file.id(), "answer", "answer"), 42u);
    r3::h5::write_uint_attribute(file.id(), "more", 7);
    bytes = file.close();
  }
  EXPECT_EQ(ImageFile::images_alive(), 0u);
  {
    ImageFile file(dir / "memory.h5", bytes, "a test file");
    EXPECT_EQ(r3::h5::read_uint_attribute(file.id(), "answer", "answer"), 42u);
    EXPECT_EQ(r3::h5::read_uint_attribute(file.id(), "more", "more"), 7u);
  }
  EXPECT_EQ(ImageFile::images_alive(), 0u) << "an ImageFile gone without close()";
}

// An object of the file still open keeps the file open through H5Fclose: close() says so, and
// the image lives on (past its ImageFile) until HDF5 really closes the file, with that object,
// when it frees the file's buffer through the callbacks, which must still find the image.
TEST(ImageFile, AnImageLivesUntilHDF5ClosesAFileAnObjectKeptOpen) {
  TempDir dir;
  r3::h5::Session session((dir / "memory.h5").string());
  ASSERT_EQ(ImageFile::images_alive(), 0u);
  hid_t group = -1;
  {
    ImageFile file(dir / "memory.h5", {}, "a test file");
    r3::h5::Handle created = r3::h5::create_group(file.id(), "kept", "kept");
    group = created.release();
    EXPECT_THROW(file.close(), r3::IoError);
  }
  EXPECT_EQ(ImageFile::images_alive(), 1u) << "the open file no longer held its image";
  ASSERT_GE(H5Gclose(group), 0);
  EXPECT_EQ(ImageFile::images_alive(), 0u);
}

// A file that does not open (bytes that are not HDF5) is an IoError naming what it was, and
// leaves no image behind.
TEST(ImageFile, BytesThatAreNotAFileAreAnErrorThatLeavesNoImage) {
  TempDir dir;
  r3::h5::Session session((dir / "memory.h5").string());
  const std::vector<std::byte> garbage(4096, std::byte{0x5a});
  try {
    ImageFile file(dir / "memory.h5", garbage, "the last commit");
    FAIL() << "opened bytes that are not an HDF5 file";
  } catch (const r3::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("the last commit"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ImageFile::images_alive(), 0u);
}

}  // namespace
