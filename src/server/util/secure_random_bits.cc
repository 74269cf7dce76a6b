#include "server/util/secure_random_bits.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.h"

namespace fedleaf::server {

SecureRandomBits::~SecureRandomBits() {
  // volatile: the compiler may not drop the stores of an object about to die.
  volatile std::uint64_t* words = buffer_.data();
  for (std::size_t i = 0; i < buffer_.size(); ++i) words[i] = 0;
}

void SecureRandomBits::refill() {
  auto* bytes = reinterpret_cast<unsigned char*>(buffer_.data());
  const std::size_t size = sizeof buffer_;
  std::size_t filled = 0;
  while (filled < size) {
    // Blocks only until the kernel's pool is first initialised at boot; never returns bits from
    // an uninitialised pool (flags 0, not GRND_INSECURE).
    const ssize_t n = ::getrandom(bytes + filled, size - filled, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(std::string("privacy noise: getrandom failed: ") + std::strerror(errno));
    }
    filled += static_cast<std::size_t>(n);
  }
  used_ = 0;
}

std::uint64_t SecureRandomBits::next() {
  if (used_ == buffer_.size()) refill();
  const std::uint64_t word = buffer_[used_];
  buffer_[used_++] = 0;
  return word;
}

}  // namespace fedleaf::server
