#include "r3/database_lock.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "r3/error.hpp"

namespace r3::run {
namespace {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// What a lock file says of its holder: "host <h> pid <p> since <time>".
struct Holder {
  std::string host;
  long pid = 0;
  std::string since;
  std::string describe() const {
    return "pid " + std::to_string(pid) + " on " + host + ", started " + since;
  }
};

Holder read_holder(int fd) {
  std::string text(512, '\0');
  ssize_t n = ::pread(fd, text.data(), text.size(), 0);
  text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  Holder holder;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    if (word == "host") in >> holder.host;
    else if (word == "pid") in >> holder.pid;
    else if (word == "since") in >> holder.since;
  }
  return holder;
}

}  // namespace

std::filesystem::path lock_path(const std::filesystem::path& database) {
  std::filesystem::path path = database;
  path += ".lock";
  return path;
}

DatabaseLock::DatabaseLock(const std::filesystem::path& database) : path_(lock_path(database)) {
  // A lock file its holder unlinks as we lock it is not the lock any more: open it again.
  for (int attempt = 0; attempt < 100; ++attempt) {
    lock(database);
    struct stat held{}, named{};
    if (::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &named) == 0 &&
        held.st_ino == named.st_ino && held.st_dev == named.st_dev)
      return;
    ::close(fd_);
    fd_ = -1;
  }
  throw IoError("flock", "the lock of the run database keeps being replaced", in_file(path_.string()));
}

void DatabaseLock::lock(const std::filesystem::path& database) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0)
    throw IoError("open", "cannot create the lock of the run database: " + std::string(std::strerror(errno)),
                  in_file(path_.string()));
  Holder previous = read_holder(fd_);
  const std::string host = host_name();
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    int error = errno;
    bool held = error == EWOULDBLOCK;
    // Without flock (some network file systems), a holder on this host is checked by its pid;
    // one on another host cannot be, and is taken to be alive.
    if (!held && !previous.host.empty())
      held = previous.host != host || (previous.pid > 0 && ::kill(static_cast<pid_t>(previous.pid), 0) == 0);
    if (held) {
      ::close(fd_);
      fd_ = -1;
      throw UsageError("another job is using the run database " + database.string() + " (" +
                       (previous.host.empty() ? std::string("its lock ") + path_.string() + " is held"
                                              : previous.describe()) +
                       "): wait for it to end, or give this job its own output.run_database" +
                       (error == EWOULDBLOCK ? ""
                                             : "; this file system has no flock, so remove " +
                                                   path_.string() + " if that job has died"));
    }
  }
  taken_over_ = previous.host.empty() ? "" : previous.describe();
  std::string text = "host " + host + " pid " + std::to_string(::getpid()) + " since " + utc_now() + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    int error = errno;
    ::close(fd_);
    fd_ = -1;
    throw IoError("write", "cannot write the lock of the run database: " + std::string(std::strerror(error)),
                  in_file(path_.string()));
  }
}

DatabaseLock::~DatabaseLock() {
  if (fd_ < 0) return;
  // Removed while still held, so that no other job can find it free and then lose it.
  ::unlink(path_.c_str());
  ::close(fd_);
}

}  // namespace r3::run
