#include "server/store/model_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/error.h"

namespace fedleaf::server {

namespace {

constexpr const char* kSuffix = ".safetensors";

bool is_valid_name(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw Error("model files: " + what + " '" + path + "': " + std::strerror(errno));
}

void fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) fail("cannot open", path);
  if (::fsync(fd) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    fail("cannot fsync", path);
  }
  ::close(fd);
}

void write_all(int fd, const std::string& bytes, const std::string& path) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("cannot write", path);
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

ModelFiles::ModelFiles(std::string directory) : directory_(std::move(directory)) {
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  if (error) {
    throw Error("model files: cannot create the directory '" + directory_ +
                "': " + error.message());
  }
  // The directory's own entry, so that the files in it are found after power loss.
  const std::string parent = std::filesystem::path(directory_).parent_path().string();
  fsync_path(parent.empty() ? "." : parent, O_RDONLY | O_DIRECTORY);
}

std::string ModelFiles::path_of(const std::string& name) const {
  if (!is_valid_name(name)) {
    throw InvalidInput("model files: the name '" + name +
                       "' is not 1 to 128 characters of [A-Za-z0-9_-]");
  }
  return directory_ + "/" + name + kSuffix;
}

void ModelFiles::persist(const std::string& name, const std::string& bytes) const {
  const std::string path = path_of(name);
  struct stat existing {};
  if (::stat(path.c_str(), &existing) == 0) return;  // content-addressed: written whole before
  static std::atomic<unsigned long> counter{0};
  const std::string temporary =
      path + "." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1)) + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create", temporary);
  try {
    write_all(fd, bytes, temporary);
    if (::fsync(fd) != 0) fail("cannot fsync", temporary);
  } catch (...) {
    ::close(fd);
    ::unlink(temporary.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temporary.c_str());
    errno = saved;
    fail("cannot rename into", path);
  }
  fsync_path(directory_, O_RDONLY | O_DIRECTORY);
}

std::string ModelFiles::read(const std::string& name) const {
  const std::string path = path_of(name);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open", path);
  std::string bytes;
  try {
    struct stat info {};
    if (::fstat(fd, &info) != 0) fail("cannot stat", path);
    bytes.resize(static_cast<std::size_t>(info.st_size));
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail("cannot read", path);
      if (n == 0) break;
      done += static_cast<std::size_t>(n);
    }
    bytes.resize(done);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return bytes;
}

bool ModelFiles::remove(const std::string& name) const {
  const std::string path = path_of(name);
  if (::unlink(path.c_str()) == 0) return true;
  if (errno != ENOENT) fail("cannot remove", path);
  return false;
}

int ModelFiles::remove_unreferenced(const std::set<std::string>& names) const {
  int removed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(directory_)) {
    const std::string file = entry.path().filename().string();
    const std::size_t suffix = file.size() - std::strlen(kSuffix);
    const bool model_file = file.size() > std::strlen(kSuffix) && file.substr(suffix) == kSuffix;
    if (model_file && names.count(file.substr(0, suffix)) > 0) continue;
    std::error_code error;
    if (std::filesystem::remove(entry.path(), error)) ++removed;
  }
  return removed;
}

}  // namespace fedleaf::server
