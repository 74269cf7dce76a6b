// Crossing the JS boundary: whole buffers copied in one step, C++ errors turned into JS Errors.
//
//   val f(val bytes) {
//     return call_from_js([&] { return bytes_to_js(decode(bytes_from_js(bytes))); });
//   }
//
// A C++ exception reaching JS would arrive as an opaque WebAssembly.Exception with no message,
// so every embind entry point runs its body through call_from_js.
#pragma once

#include <cstdint>
#include <string>
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

// Throws a JS Error with `message`; `code` is the fedleaf error class ("InvalidInput", ...).
[[noreturn]] void throw_js_error(const std::string& code, const std::string& message);

// "InvalidInput", "NotFound", "Conflict", "Error" (other fedleaf errors) or "InternalError".
std::string error_code_of(const std::exception& e);

// Runs `body`; a C++ exception becomes a JS Error with the same message and a `code` property.
template <class Body>
auto call_from_js(Body&& body) -> decltype(body()) {
  std::string code;
  std::string message;
  try {
    return body();
  } catch (const std::exception& e) {
    code = error_code_of(e);
    message = e.what();
  }
  throw_js_error(code, message);
}

// Small conversions used by every binding.
std::vector<std::size_t> shape_from_js(const val& array, const std::string& what);
val shape_to_js(const std::vector<std::size_t>& shape);

}  // namespace fedleaf::wasm
