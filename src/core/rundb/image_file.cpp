#include "image_file.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "r3/error.hpp"

namespace r3::run {

// What the driver's callbacks are given as user data. It is freed once nothing holds it:
// - the ImageFile;
// - each copy of the callbacks a property list keeps (HDF5 calls udata_copy and udata_free);
// - the open file: the core driver copies the callbacks, user data included, without
//   udata_copy, and is done with them at its last call, the free of the file's buffer at close
//   (FILE_CLOSE; a file whose buffer was never allocated, every write having failed, never makes
//   it, and leaves one Image behind). That close may come after ImageFile::close() threw (an
//   object of the file still open kept it open, or H5Fclose failed before the file was freed),
//   or after the ImageFile is gone, and must still find the Image.
struct ImageFile::Image {
  void* buffer = nullptr;  // the driver's, while the file is open
  std::size_t size = 0;
  std::vector<std::byte> closed;  // the bytes at close
  std::atomic<std::size_t> holders{1};
  bool file_holds = false;  // the open file holds it (set once the file is open)
  static inline std::atomic<std::size_t> alive{0};
  Image() { ++alive; }
  ~Image() { --alive; }
  Image(const Image&) = delete;
  Image& operator=(const Image&) = delete;
};

namespace {

using Image = ImageFile::Image;

void release(Image* image) {
  if (image->holders.fetch_sub(1) == 1) delete image;
}

// The callbacks never throw (HDF5 calls them from C).
extern "C" {
static void* image_malloc(std::size_t size, H5FD_file_image_op_t op, void* data) {
  void* buffer = std::malloc(size);
  if (op == H5FD_FILE_IMAGE_OP_FILE_OPEN) {
    auto* image = static_cast<Image*>(data);
    image->buffer = buffer;
    image->size = size;
  }
  return buffer;
}
static void* image_memcpy(void* to, const void* from, std::size_t size, H5FD_file_image_op_t,
                          void*) {
  return std::memcpy(to, from, size);
}
static void* image_realloc(void* buffer, std::size_t size, H5FD_file_image_op_t, void* data) {
  auto* image = static_cast<Image*>(data);
  void* moved = std::realloc(buffer, size);
  if (buffer == image->buffer || image->buffer == nullptr) {
    image->buffer = moved;
    image->size = size;
  }
  return moved;
}
static herr_t image_free(void* buffer, H5FD_file_image_op_t op, void* data) {
  auto* image = static_cast<Image*>(data);
  // Only the held file's own close hands bytes over and lets go of the Image: not the interim
  // closes of a failed or tentative open.
  const bool held_file_closes = op == H5FD_FILE_IMAGE_OP_FILE_CLOSE && image->file_holds;
  if (held_file_closes && buffer != nullptr && buffer == image->buffer) {
    const auto* bytes = static_cast<const std::byte*>(buffer);
    try {
      image->closed.assign(bytes, bytes + image->size);
    } catch (...) {
      image->closed.clear();  // out of memory: close() says the image was not handed over
    }
    image->buffer = nullptr;
  }
  std::free(buffer);
  if (held_file_closes) {
    image->file_holds = false;
    release(image);
  }
  return 0;
}
static void* image_udata_copy(void* data) {
  ++static_cast<Image*>(data)->holders;
  return data;
}
static herr_t image_udata_free(void* data) {
  release(static_cast<Image*>(data));
  return 0;
}
}

std::string unique_name(const std::filesystem::path& path) {
  static std::atomic<std::uint64_t> made{0};
  return path.string() + ".image-" + std::to_string(::getpid()) + "-" + std::to_string(++made);
}

}  // namespace

ImageFile::ImageFile(const std::filesystem::path& path, std::span<const std::byte> bytes,
                     std::string_view what)
    : what_(what), image_(new Image) {
  using h5::check;
  try {
    h5::Handle access(check(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate", "file access"), H5Pclose);
    check(H5Pset_libver_bounds(access, H5F_LIBVER_V18, H5F_LIBVER_V18), "H5Pset_libver_bounds",
          what_);
    check(H5Pset_fapl_core(access, 1 << 16, /*backing_store=*/0), "H5Pset_fapl_core", what_);
    H5FD_file_image_callbacks_t callbacks = {image_malloc, image_memcpy,     image_realloc,
                                             image_free,   image_udata_copy, image_udata_free,
                                             image_};
    check(H5Pset_file_image_callbacks(access, &callbacks), "H5Pset_file_image_callbacks", what_);
    // H5Pset_file_image copies the bytes (PROPERTY_LIST_SET), it does not write to them.
    if (!bytes.empty())
      check(H5Pset_file_image(access, const_cast<std::byte*>(bytes.data()), bytes.size()),
            "H5Pset_file_image", what_);
    const std::string name = unique_name(path);
    const hid_t id = bytes.empty()
                         ? check(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access),
                                 "H5Fcreate", "cannot create " + what_)
                         : check(H5Fopen(name.c_str(), H5F_ACC_RDWR, access), "H5Fopen",
                                 "cannot open the last image of " + what_);
    // Only an open file holds the Image: a failed open may free its buffer (FILE_CLOSE) on the
    // way out, and must not let go of what it never held.
    image_->file_holds = true;
    ++image_->holders;
    file_ = h5::Handle(id, H5Fclose);
    // `access` closes now: its copy of the bytes freed at once, not counted as the file's.
  } catch (...) {
    release(image_);
    throw;
  }
}

ImageFile::~ImageFile() {
  file_.reset();
  release(image_);
}

std::vector<std::byte> ImageFile::close() {
  h5::check(H5Fclose(file_.release()), "H5Fclose", what_);
  if (image_->closed.empty())
    throw IoError("H5Fclose", what_ +
                                  ": the file's image was not handed over (an object of it "
                                  "still open keeps the file open, or copying its bytes ran "
                                  "out of memory)");
  return std::move(image_->closed);
}

std::size_t ImageFile::images_alive() { return Image::alive.load(); }

}  // namespace r3::run
