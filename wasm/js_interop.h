// Crossing the JS boundary: whole buffers copied in one step, C++ errors turned into JS Errors.
//
//   val f(val bytes) {
//     return call_from_js([&] { return bytes_to_js(decode(bytes_from_js(bytes))); });
//   }
//
// A C++ exception reaching JS would arrive as an opaque WebAssembly.Exception with no message,
// so every embind entry point runs its body through call_from_js. That catches the exception
// and returns normally, leaving the error for takeError(), which the JS loader calls after every
// binding call and throws (js_bindings/src/engine/bindings.js). A throw from inside the call would
// skip the frames below it: the std::string arguments embind had allocated, the emval handles of
// val arguments (a model's bytes) and every C++ local were never freed, on each failed call.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <emscripten/val.h>

namespace fedleaf::wasm {

using emscripten::val;

// Copies any TypedArray/DataView (its byte range) into a new vector: one JS-side memcpy.
std::vector<std::uint8_t> bytes_from_js(const val& typed_array);
// A new JS Uint8Array owning a copy of [data, data + size).
// The byte length of a TypedArray or DataView; InvalidInput for anything else.
std::uint64_t byte_length_of_js(const val& typed_array);
// Copies bytes [begin, begin + size) of a TypedArray or DataView into `out` (wasm memory) without
// copying the rest: how the leaf reads only the parts of a model it trains.
void copy_bytes_from_js(const val& typed_array, std::uint64_t begin, std::size_t size,
                        std::uint8_t* out);
val bytes_to_js(const std::uint8_t* data, std::size_t size);
inline val bytes_to_js(const std::vector<std::uint8_t>& bytes) {
  return bytes_to_js(bytes.data(), bytes.size());
}

// Records the error of the binding call under way, for take_error(); `code` is the fedleaf error
// class ("InvalidInput", ...).
void set_error(std::string code, std::string message);
// The error recorded since the last call, as {code, message}, and clears it; undefined when there
// is none. Registered as Module.takeError; JS makes the Error (so its stack starts in JS).
val take_error();

// "InvalidInput", "NotFound", "Conflict", "Error" (other fedleaf errors) or "InternalError".
std::string error_code_of(const std::exception& e);
// e.what(), with what an allocation failure means here ("std::bad_alloc" alone names nothing).
std::string error_message_of(const std::exception& e);

// What a binding returns when its body threw: nothing JS uses, since JS throws the error instead.
template <class T>
T failed_result() {
  return T{};
}
template <>
inline val failed_result<val>() {
  return val::undefined();
}

// Runs `body`; a C++ exception is recorded (set_error) and the call returns failed_result().
template <class Body>
auto call_from_js(Body&& body) -> decltype(body()) {
  using Result = decltype(body());
  try {
    return body();
  } catch (const std::exception& e) {
    set_error(error_code_of(e), error_message_of(e));
  }
  if constexpr (!std::is_void_v<Result>) return failed_result<Result>();
}

// Small conversions used by every binding.
std::vector<std::size_t> shape_from_js(const val& array, const std::string& what);
val shape_to_js(const std::vector<std::size_t>& shape);

}  // namespace fedleaf::wasm
