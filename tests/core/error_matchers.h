// Catch2 matchers on fedleaf errors: the type and a fragment of the message, both asserted.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "core/error.h"

namespace fedleaf::test {

class MessageContains : public Catch::MatcherBase<fedleaf::Error> {
 public:
  explicit MessageContains(std::string fragment) : fragment_(std::move(fragment)) {}
  bool match(const fedleaf::Error& e) const override {
    return std::string(e.what()).find(fragment_) != std::string::npos;
  }
  std::string describe() const override { return "message contains \"" + fragment_ + "\""; }

 private:
  std::string fragment_;
};

}  // namespace fedleaf::test
