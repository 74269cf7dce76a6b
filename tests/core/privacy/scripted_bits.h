// A RandomBits that returns given words in order, for tests that steer a sampler into a branch
// (a tie with a threshold, a rare tail) no seed reaches. Throws once the script is used up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "core/privacy/random_bits.h"

namespace fedleaf::test {

class ScriptedBits : public core::RandomBits {
 public:
  explicit ScriptedBits(std::vector<std::uint64_t> words) : words_(std::move(words)) {}
  std::uint64_t next() override {
    if (used_ == words_.size()) throw std::runtime_error("scripted bits: script used up");
    return words_[used_++];
  }
  std::size_t used() const { return used_; }

 private:
  std::vector<std::uint64_t> words_;
  std::size_t used_ = 0;
};

}  // namespace fedleaf::test
