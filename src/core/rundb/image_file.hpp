// An HDF5 file kept in memory by HDF5's core driver, made from the bytes of an earlier one (or
// empty), whose bytes close() hands back. Private to libr3core: the run database's writer
// (run_database.cpp) adds each commit to the last one's bytes this way.
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../capture/h5.hpp"

namespace r3::run {

class ImageFile {
 public:
  // Opens `bytes` as a file, or creates an empty one when there are none, under a name that no
  // other open file of this process has (made from `path`, which is not touched). There is no
  // backing store: HDF5 never writes to disk itself, so a full or vanished disk is an error of
  // the caller's own write, not a failed H5Fclose that leaves the file half-open and crashes
  // HDF5 at exit. Call it, and everything on the file, within an h5::Session. Throws IoError
  // naming `what`.
  ImageFile(const std::filesystem::path& path, std::span<const std::byte> bytes,
            std::string_view what);
  // Closes the file if close() was not called; its bytes are dropped.
  ~ImageFile();
  ImageFile(const ImageFile&) = delete;
  ImageFile& operator=(const ImageFile&) = delete;

  hid_t id() const { return file_.get(); }

  // Closes the file and returns its bytes, taken when the driver frees them: only then is the
  // superblock final (HDF5 1.10's H5Fget_file_image of a file still open gives one whose checksum
  // fails). Throws IoError when HDF5 does not close it then: an object of the file still open
  // keeps it open (HDF5 closes it with that object's close, or at exit).
  std::vector<std::byte> close();

  // The images alive: each file's from its opening until HDF5 and its ImageFile have both let go
  // of it. For tests.
  static std::size_t images_alive();

  struct Image;  // what HDF5's callbacks are given (image_file.cpp)

 private:
  std::string what_;
  Image* image_;
  h5::Handle file_;
};

}  // namespace r3::run
