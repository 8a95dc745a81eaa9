// One tuning job per run database. Two jobs writing the same run.h5 each replace it whole after
// every generation, so the one that writes last silently loses the other's candidates.
#pragma once

#include <filesystem>
#include <string>

namespace r3::run {

// `<database>.lock`.
std::filesystem::path lock_path(const std::filesystem::path& database);

// An exclusive flock on `<database>.lock`, which names its holder (host, pid, start time) for
// whoever is refused. Throws UsageError naming the holder while another job holds it; a lock file
// left by a job that died (its flock is gone with it) is taken over, and taken_over() names that
// job. On file systems without flock, a holder on this host is checked by its pid and one on
// another host is taken to be alive. The file is removed when the lock is released.
class DatabaseLock {
 public:
  explicit DatabaseLock(const std::filesystem::path& database);
  ~DatabaseLock();
  DatabaseLock(const DatabaseLock&) = delete;
  DatabaseLock& operator=(const DatabaseLock&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // The job whose stale lock this one took over ("pid 123 on node7, started ..."); "" if none.
  const std::string& taken_over() const { return taken_over_; }

 private:
  void lock(const std::filesystem::path& database);
  std::filesystem::path path_;
  int fd_ = -1;
  std::string taken_over_;
};

}  // namespace r3::run
