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
constexpr const char* kTemporarySuffix = ".tmp";

bool ends_with(const std::string& text, const char* suffix) {
  const std::size_t n = std::strlen(suffix);
  return text.size() >= n && text.compare(text.size() - n, n, suffix) == 0;
}

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
  const std::string temporary = path + "." + std::to_string(::getpid()) + "." +
                                std::to_string(counter.fetch_add(1)) + kTemporarySuffix;
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const std::string shown = std::filesystem::path(temporary).filename().string();
  if (fd < 0) fail("cannot create", shown);
  try {
    write_all(fd, bytes, shown);
    if (::fsync(fd) != 0) fail("cannot fsync", shown);
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
    fail("cannot rename into", name + kSuffix);
  }
  fsync_path(directory_, O_RDONLY | O_DIRECTORY);
}

std::string ModelFiles::read(const std::string& name) const {
  const std::string path = path_of(name);
  const std::string shown = name + kSuffix;
  // Non-blocking: a FIFO put in a model's place would block open() (and the thread) until a
  // writer came; it is refused below like any file that is not a regular one.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail("cannot open", shown);
  std::string bytes;
  try {
    struct stat info {};
    if (::fstat(fd, &info) != 0) fail("cannot stat", shown);
    if (!S_ISREG(info.st_mode)) {
      throw Error("model files: '" + shown + "' is not a regular file");
    }
    bytes.resize(static_cast<std::size_t>(info.st_size));
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail("cannot read", shown);
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
  if (errno != ENOENT) fail("cannot remove", name + kSuffix);
  return false;
}

std::vector<std::string> ModelFiles::set_aside_unreferenced(
    const std::set<std::string>& names) const {
  std::vector<std::string> unreferenced;
  std::error_code error;
  std::filesystem::directory_iterator entries(directory_, error);
  if (error) {
    throw Error("model files: cannot list the directory '" + directory_ + "': " + error.message());
  }
  for (const auto& entry : entries) {
    const std::string file = entry.path().filename().string();
    if (ends_with(file, kTemporarySuffix)) {
      std::filesystem::remove(entry.path(), error);  // an interrupted write: never renamed
      continue;
    }
    if (!ends_with(file, kSuffix) || file.size() == std::strlen(kSuffix)) continue;
    if (names.count(file.substr(0, file.size() - std::strlen(kSuffix))) == 0) {
      unreferenced.push_back(file);
    }
  }
  if (unreferenced.empty()) return unreferenced;
  const std::string aside = directory_ + "/" + kLostAndFound;
  std::filesystem::create_directories(aside, error);
  if (error) {
    throw Error("model files: cannot create the directory '" + aside + "': " + error.message());
  }
  for (const std::string& file : unreferenced) {
    const std::string from = directory_ + "/" + file;
    const std::string to = aside + "/" + file;
    if (::rename(from.c_str(), to.c_str()) != 0) fail("cannot move aside", file);
  }
  fsync_path(aside, O_RDONLY | O_DIRECTORY);
  fsync_path(directory_, O_RDONLY | O_DIRECTORY);
  return unreferenced;
}

}  // namespace fedleaf::server
