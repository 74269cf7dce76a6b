// A dense N-d array of one of the fedleaf dtypes, stored as an xtensor array.
//
//   DenseTensor t = DenseTensor::zeros(DType::F32, {3, 4});
//   xt::xarray<float>& a = t.array<float>();   // throws InvalidInput if t is not F32
//   a(1, 2) = 5.f;
//
// The storage is row-major and contiguous, so raw_data() is the little-endian safetensors
// payload on every platform fedleaf targets (x86-64, aarch64, wasm32).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <xtensor/xarray.hpp>

#include "core/error.h"
#include "core/tensor/dtype.h"

namespace fedleaf::core {

using Shape = std::vector<std::size_t>;

// "[2, 3]": shapes and dense_shapes as they appear in error messages.
template <class Int>
std::string shape_to_string(const std::vector<Int>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}
// Number of elements of `shape`; throws InvalidInput naming `context` on overflow.
std::size_t shape_element_count(const Shape& shape, const std::string& context);

class DenseTensor {
 public:
  using Storage = std::variant<xt::xarray<float>, xt::xarray<double>, xt::xarray<std::int32_t>,
                               xt::xarray<std::int64_t>, xt::xarray<std::uint8_t>>;

  // An F32 tensor of shape [0].
  DenseTensor();
  template <class T>
  explicit DenseTensor(xt::xarray<T> array) : storage_(std::move(array)) {}

  static DenseTensor zeros(DType dtype, const Shape& shape);
  // Copies `nbytes` little-endian bytes; throws InvalidInput naming `context` when nbytes is not
  // shape × dtype size.
  static DenseTensor from_bytes(DType dtype, const Shape& shape, const std::uint8_t* data,
                                std::size_t nbytes, const std::string& context = "tensor");

  DType dtype() const;
  Shape shape() const;
  std::size_t rank() const;
  std::size_t size() const;  // number of elements
  std::size_t nbytes() const { return size() * dtype_size(dtype()); }
  const std::uint8_t* raw_data() const;
  std::uint8_t* raw_data();

  // Typed access; throws InvalidInput when T is not this tensor's dtype.
  template <class T>
  xt::xarray<T>& array() {
    check_dtype(dtype_of<T>());
    return std::get<xt::xarray<T>>(storage_);
  }
  template <class T>
  const xt::xarray<T>& array() const {
    check_dtype(dtype_of<T>());
    return std::get<xt::xarray<T>>(storage_);
  }
  template <class T>
  T* data() {
    return array<T>().data();
  }
  template <class T>
  const T* data() const {
    return array<T>().data();
  }

  // Same dtype, shape and bytes (NaN payloads compare bitwise).
  friend bool operator==(const DenseTensor& a, const DenseTensor& b);
  friend bool operator!=(const DenseTensor& a, const DenseTensor& b) { return !(a == b); }

 private:
  void check_dtype(DType wanted) const;
  Storage storage_;
};

}  // namespace fedleaf::core
