#include "core/tensor/dense_tensor.h"

#include <cstring>
#include <limits>

namespace fedleaf::core {

std::size_t shape_element_count(const Shape& shape, const std::string& context) {
  std::size_t n = 1;
  for (std::size_t d : shape) {
    if (d != 0 && n > std::numeric_limits<std::size_t>::max() / d) {
      throw InvalidInput(context + ": shape " + shape_to_string(shape) +
                         " has more elements than fit in memory");
    }
    n *= d;
  }
  return n;
}

DenseTensor::DenseTensor() : storage_(xt::xarray<float>::from_shape({0})) {}

DenseTensor DenseTensor::zeros(DType dtype, const Shape& shape) {
  shape_element_count(shape, "zeros");
  return visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    xt::xarray<T> a = xt::xarray<T>::from_shape(shape);
    a.fill(T{0});
    return DenseTensor(std::move(a));
  });
}

DenseTensor DenseTensor::from_bytes(DType dtype, const Shape& shape, const std::uint8_t* data,
                                    std::size_t nbytes, const std::string& context) {
  const std::size_t count = shape_element_count(shape, context);
  if (count > std::numeric_limits<std::size_t>::max() / dtype_size(dtype) ||
      count * dtype_size(dtype) != nbytes) {
    throw InvalidInput(context + ": " + std::to_string(nbytes) + " bytes do not match shape " +
                       shape_to_string(shape) + " of " + std::string(dtype_name(dtype)));
  }
  return visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    xt::xarray<T> a = xt::xarray<T>::from_shape(shape);
    if (nbytes) std::memcpy(a.data(), data, nbytes);
    return DenseTensor(std::move(a));
  });
}

DType DenseTensor::dtype() const {
  return std::visit(
      [](const auto& a) { return dtype_of<typename std::decay_t<decltype(a)>::value_type>(); },
      storage_);
}

Shape DenseTensor::shape() const {
  return std::visit([](const auto& a) { return Shape(a.shape().begin(), a.shape().end()); },
                    storage_);
}

std::size_t DenseTensor::rank() const {
  return std::visit([](const auto& a) { return a.dimension(); }, storage_);
}

std::size_t DenseTensor::size() const {
  return std::visit([](const auto& a) { return a.size(); }, storage_);
}

const std::uint8_t* DenseTensor::raw_data() const {
  return std::visit([](const auto& a) { return reinterpret_cast<const std::uint8_t*>(a.data()); },
                    storage_);
}

std::uint8_t* DenseTensor::raw_data() {
  return std::visit([](auto& a) { return reinterpret_cast<std::uint8_t*>(a.data()); }, storage_);
}

void DenseTensor::check_dtype(DType wanted) const {
  if (dtype() != wanted) {
    throw InvalidInput("tensor has dtype " + std::string(dtype_name(dtype())) + ", expected " +
                       std::string(dtype_name(wanted)));
  }
}

bool operator==(const DenseTensor& a, const DenseTensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.nbytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
}

}  // namespace fedleaf::core
