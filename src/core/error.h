// The one error hierarchy of fedleaf.
//
//   try { read_safetensors(bytes); }
//   catch (const fedleaf::InvalidInput& e) { /* e.what() names the tensor and the rule */ }
//
// Every error a fedleaf component raises derives from fedleaf::Error. Messages name the field or
// tensor involved and the rule that was broken, because they travel unchanged to HTTP clients
// and JS callers. The server maps each subclass to one HTTP status in a single place.
#pragma once

#include <stdexcept>
#include <string>

namespace fedleaf {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The caller's data or request breaks a documented rule (HTTP 400).
class InvalidInput : public Error {
 public:
  using Error::Error;
};

// A named thing does not exist (HTTP 404).
class NotFound : public Error {
 public:
  using Error::Error;
};

// The request contradicts state that already exists (HTTP 409).
class Conflict : public Error {
 public:
  using Error::Error;
};

}  // namespace fedleaf
