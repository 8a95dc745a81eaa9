#include "r3/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "r3/error.hpp"

namespace r3 {
namespace {

std::optional<std::string> not_regular(mode_t mode) {
  if (S_ISREG(mode)) return std::nullopt;
  if (S_ISDIR(mode)) return "is a directory, not a file";
  if (S_ISFIFO(mode)) return "is a FIFO, not a regular file";
  if (S_ISCHR(mode)) return "is a character device, not a regular file";
  if (S_ISBLK(mode)) return "is a block device, not a regular file";
  if (S_ISSOCK(mode)) return "is a socket, not a regular file";
  return "is not a regular file";
}

std::string unreadable(int error) {
  return error == ENOENT ? "does not exist" : "cannot be read: " + std::string(std::strerror(error));
}

}  // namespace

std::optional<std::string> not_a_readable_file(const std::filesystem::path& path) {
  struct stat info{};
  if (::stat(path.c_str(), &info) != 0) return unreadable(errno);
  if (auto why = not_regular(info.st_mode)) return why;
  if (::access(path.c_str(), R_OK) != 0) return unreadable(errno);
  return std::nullopt;
}

std::string read_text_file(const std::filesystem::path& path, std::string_view what,
                           std::uint64_t max_bytes) {
  const std::string name(what);  // the error's context names the file
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw IoError("open", name + " " + unreadable(errno), in_file(path.string()));
  struct stat info{};
  if (::fstat(fd, &info) != 0) {
    int error = errno;
    ::close(fd);
    throw IoError("fstat", name + " " + unreadable(error), in_file(path.string()));
  }
  if (auto why = not_regular(info.st_mode)) {
    ::close(fd);
    throw IoError("open", name + " " + *why, in_file(path.string()));
  }
  if (static_cast<std::uint64_t>(info.st_size) > max_bytes) {
    ::close(fd);
    throw IoError("open",
                  name + " is " + std::to_string(info.st_size) + " bytes, more than the " +
                      std::to_string(max_bytes) + " r3 reads as a " + std::string(what),
                  in_file(path.string()));
  }
  std::string text(static_cast<std::size_t>(info.st_size), '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::read(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      ::close(fd);
      throw IoError("read", name + " " + unreadable(error), in_file(path.string()));
    }
    if (n == 0) break;  // shrank while read
    done += static_cast<std::size_t>(n);
  }
  text.resize(done);
  ::close(fd);
  return text;
}

void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw IoError("write", "cannot write " + path.string() + ": " + std::strerror(errno));
}

}  // namespace r3
