#include "js_interop.h"

#include <emscripten/bind.h>

#include <cmath>
#include <new>
#include <stdexcept>
#include <utility>

#include "core/error.h"

namespace fedleaf::wasm {

std::vector<std::uint8_t> bytes_from_js(const val& typed_array) {
  if (typed_array.isUndefined() || typed_array.isNull() || !typed_array["buffer"].as<bool>()) {
    throw InvalidInput("expected a TypedArray or DataView");
  }
  const auto size = typed_array["byteLength"].as<std::size_t>();
  std::vector<std::uint8_t> out(size);
  const val source =
      val::global("Uint8Array").new_(typed_array["buffer"], typed_array["byteOffset"], size);
  // The memory view is created after the allocation above, so memory growth cannot detach it.
  val(emscripten::typed_memory_view(size, out.data())).call<void>("set", source);
  return out;
}

std::uint64_t byte_length_of_js(const val& typed_array) {
  if (typed_array.isUndefined() || typed_array.isNull() || !typed_array["buffer"].as<bool>()) {
    throw InvalidInput("expected a TypedArray or DataView");
  }
  return static_cast<std::uint64_t>(typed_array["byteLength"].as<double>());
}

void copy_bytes_from_js(const val& typed_array, std::uint64_t begin, std::size_t size,
                        std::uint8_t* out) {
  if (begin + size > byte_length_of_js(typed_array)) {
    throw InvalidInput("byte range [" + std::to_string(begin) + ", " +
                       std::to_string(begin + size) + ") is outside the array");
  }
  const val source =
      val::global("Uint8Array")
          .new_(typed_array["buffer"],
                typed_array["byteOffset"].as<double>() + static_cast<double>(begin), size);
  // Nothing allocates between making the view and the copy, so it cannot be detached.
  val(emscripten::typed_memory_view(size, out)).call<void>("set", source);
}

val bytes_to_js(const std::uint8_t* data, std::size_t size) {
  val out = val::global("Uint8Array").new_(size);
  out.call<void>("set", val(emscripten::typed_memory_view(size, data)));
  return out;
}

namespace {

// The module runs on one thread, and JS takes the error right after the call that set it.
struct PendingError {
  bool set = false;
  std::string code;
  std::string message;
};
PendingError& pending_error() {
  static PendingError error;
  return error;
}

}  // namespace

void set_error(std::string code, std::string message) {
  PendingError& e = pending_error();
  e.set = true;
  e.code = std::move(code);
  e.message = std::move(message);
}

val take_error() {
  PendingError& e = pending_error();
  if (!e.set) return val::undefined();
  val error = val::object();
  error.set("code", e.code);
  error.set("message", e.message);
  e = PendingError{};
  return error;
}

std::string error_code_of(const std::exception& e) {
  if (dynamic_cast<const InvalidInput*>(&e)) return "InvalidInput";
  if (dynamic_cast<const NotFound*>(&e)) return "NotFound";
  if (dynamic_cast<const Conflict*>(&e)) return "Conflict";
  if (dynamic_cast<const Error*>(&e)) return "Error";
  return "InternalError";
}

std::string error_message_of(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) || dynamic_cast<const std::length_error*>(&e)) {
    return std::string(
               "out of memory: wasm memory (at most 4 GB, less where the engine limits "
               "it) cannot hold what this call needs (") +
           e.what() + ")";
  }
  return e.what();
}

std::vector<std::size_t> shape_from_js(const val& array, const std::string& what) {
  if (!val::global("Array").call<bool>("isArray", array)) {
    throw InvalidInput(what + " must be an array of non-negative integers");
  }
  const auto n = array["length"].as<std::size_t>();
  std::vector<std::size_t> shape(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double d = array[i].as<double>();
    if (!(d >= 0) || std::floor(d) != d || d > 9007199254740991.0) {
      throw InvalidInput(what + "[" + std::to_string(i) + "] must be a non-negative integer");
    }
    shape[i] = static_cast<std::size_t>(d);
  }
  return shape;
}

val shape_to_js(const std::vector<std::size_t>& shape) {
  val out = val::array();
  for (std::size_t d : shape) out.call<void>("push", static_cast<double>(d));
  return out;
}

EMSCRIPTEN_BINDINGS(fedleaf_interop) { emscripten::function("takeError", &take_error); }

}  // namespace fedleaf::wasm
