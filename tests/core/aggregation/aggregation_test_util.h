// Shared machinery of the sparse-sum tests: random multi-client scenarios and a dense f64
// reference of every operator, written straight from the formulas in docs/design.md.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "core/aggregation/accumulator/sparse_sum_accumulator.h"
#include "core/tensor/coalesce.h"
#include "tests/core/error_matchers.h"

namespace fedleaf::test {

struct ClientUpdate {
  core::Tensor tensor;
  double weight;
};

struct Scenario {
  core::UpdateEncoding encoding;
  core::DType dtype;
  core::DenseShape dense_shape;
  std::vector<ClientUpdate> clients;
};

inline std::size_t element_count(const core::DenseShape& shape) {
  std::size_t n = 1;
  for (std::int64_t d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

// A random dense_shape of rank [min_rank, 3] with small dimensions (≥ 1).
inline core::DenseShape random_shape(std::mt19937_64& rng, std::size_t min_rank) {
  const std::size_t rank = std::uniform_int_distribution<std::size_t>(min_rank, 3)(rng);
  core::DenseShape shape;
  for (std::size_t d = 0; d < rank; ++d) {
    shape.push_back(std::uniform_int_distribution<std::int64_t>(1, d == 0 ? 40 : 6)(rng));
  }
  return shape;
}

// One client's update. Each client draws its keys from a random window of the key space, so
// index sets overlap between some clients and are disjoint between others; drawing with
// replacement leaves duplicates in about half of the updates (never coalesced here).
template <class T>
core::Tensor random_update(std::mt19937_64& rng, core::UpdateEncoding encoding,
                           const core::DenseShape& shape) {
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  if (encoding == core::UpdateEncoding::kDense) {
    xt::xarray<T> a = xt::xarray<T>::from_shape(core::Shape(shape.begin(), shape.end()));
    for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = static_cast<T>(value(rng));
    return core::DenseTensor(std::move(a));
  }
  const std::size_t keys = encoding == core::UpdateEncoding::kCoo
                               ? element_count(shape)
                               : static_cast<std::size_t>(shape[0]);
  std::size_t lo = std::uniform_int_distribution<std::size_t>(0, keys - 1)(rng);
  std::size_t hi = std::uniform_int_distribution<std::size_t>(lo + 1, keys)(rng);
  const std::size_t entries = std::uniform_int_distribution<std::size_t>(0, 2 * (hi - lo))(rng);
  const bool unique = std::bernoulli_distribution(0.5)(rng);
  std::vector<std::size_t> picked;
  if (unique) {
    for (std::size_t k = lo; k < hi; ++k) {
      if (std::bernoulli_distribution(0.5)(rng)) picked.push_back(k);
    }
    std::shuffle(picked.begin(), picked.end(), rng);
  } else {
    for (std::size_t e = 0; e < entries; ++e) {
      picked.push_back(std::uniform_int_distribution<std::size_t>(lo, hi - 1)(rng));
    }
  }
  const std::size_t n = picked.size();
  if (encoding == core::UpdateEncoding::kCoo) {
    core::CooIndices idx = core::CooIndices::from_shape({n, shape.size()});
    for (std::size_t e = 0; e < n; ++e) {
      std::size_t rest = picked[e];
      for (std::size_t d = shape.size(); d-- > 0;) {
        idx(e, d) = static_cast<std::int64_t>(rest % static_cast<std::size_t>(shape[d]));
        rest /= static_cast<std::size_t>(shape[d]);
      }
    }
    xt::xarray<T> v = xt::xarray<T>::from_shape({n});
    for (std::size_t e = 0; e < n; ++e) v(e) = static_cast<T>(value(rng));
    return core::SparseTensor(std::move(idx), core::DenseTensor(std::move(v)), shape);
  }
  core::Shape vshape{n};
  for (std::size_t d = 1; d < shape.size(); ++d)
    vshape.push_back(static_cast<std::size_t>(shape[d]));
  xt::xarray<T> v = xt::xarray<T>::from_shape(vshape);
  for (std::size_t i = 0; i < v.size(); ++i) v.data()[i] = static_cast<T>(value(rng));
  core::RowIndices rows = core::RowIndices::from_shape({n});
  for (std::size_t e = 0; e < n; ++e) rows(e) = static_cast<std::int64_t>(picked[e]);
  return core::RowSparseTensor(std::move(rows), core::DenseTensor(std::move(v)), shape);
}

inline Scenario random_scenario(std::mt19937_64& rng, core::UpdateEncoding encoding,
                                core::DType dtype, std::size_t num_clients) {
  Scenario s{encoding,
             dtype,
             random_shape(rng, encoding == core::UpdateEncoding::kCoo ||
                                       encoding == core::UpdateEncoding::kRowSparse
                                   ? 1
                                   : 0),
             {}};
  for (std::size_t c = 0; c < num_clients; ++c) {
    const double weight = static_cast<double>(std::uniform_int_distribution<int>(1, 100)(rng));
    s.clients.push_back({dtype == core::DType::F32
                             ? random_update<float>(rng, encoding, s.dense_shape)
                             : random_update<double>(rng, encoding, s.dense_shape),
                         weight});
  }
  return s;
}

// Per element: the client's coalesced value (f64) and whether the client sent the element.
struct DenseUpdate {
  std::vector<double> values;
  std::vector<bool> sent;
};

inline DenseUpdate densify(const core::Tensor& t, std::size_t elements) {
  DenseUpdate out{std::vector<double>(elements, 0.0), std::vector<bool>(elements, false)};
  const auto read = [](const core::DenseTensor& v, std::size_t i) {
    switch (v.dtype()) {
      case core::DType::F32:
        return static_cast<double>(v.data<float>()[i]);
      case core::DType::I64:
        return static_cast<double>(v.data<std::int64_t>()[i]);
      default:
        return v.data<double>()[i];
    }
  };
  if (const auto* d = std::get_if<core::DenseTensor>(&t)) {
    for (std::size_t i = 0; i < elements; ++i) {
      out.values[i] = read(*d, i);
      out.sent[i] = true;
    }
  } else if (const auto* s = std::get_if<core::SparseTensor>(&t)) {
    for (std::size_t e = 0; e < s->nnz(); ++e) {
      std::size_t key = 0;
      for (std::size_t dim = 0; dim < s->rank(); ++dim) {
        key = key * static_cast<std::size_t>(s->dense_shape()[dim]) +
              static_cast<std::size_t>(s->indices()(e, dim));
      }
      out.values[key] += read(s->values(), e);
      out.sent[key] = true;
    }
  } else {
    const auto& r = std::get<core::RowSparseTensor>(t);
    const std::size_t w = r.row_size();
    for (std::size_t e = 0; e < r.num_rows(); ++e) {
      const auto row = static_cast<std::size_t>(r.indices()(e));
      for (std::size_t j = 0; j < w; ++j) {
        out.values[row * w + j] += read(r.values(), e * w + j);
        out.sent[row * w + j] = true;
      }
    }
  }
  return out;
}

// The operator's result per element, and which elements the result holds.
struct Reference {
  std::vector<double> values;
  std::vector<bool> present;
};

inline Reference reference_result(const Scenario& s, const core::OperatorSpec& spec) {
  using core::SparseSumOperator;
  const std::size_t n = element_count(s.dense_shape);
  std::vector<double> numerator(n, 0.0), contributors(n, 0.0), counts(n, 0.0);
  std::vector<bool> present(n, s.encoding == core::UpdateEncoding::kDense);
  double total = 0.0;
  for (const ClientUpdate& c : s.clients) {
    DenseUpdate u = densify(c.tensor, n);
    if (spec.row_clip > 0.0) {  // row clip: each sent row's rms at most row_clip × the rms bound
      const std::size_t w = n / static_cast<std::size_t>(s.dense_shape[0]);
      const double row_bound = spec.row_clip * spec.clip.bound * std::sqrt(double(w));
      for (std::size_t at = 0; at < n; at += w) {
        double sq = 0.0;
        for (std::size_t j = 0; j < w; ++j) sq += u.values[at + j] * u.values[at + j];
        if (std::sqrt(sq) <= row_bound) continue;
        const double f = row_bound / std::sqrt(sq);
        for (std::size_t j = 0; j < w; ++j) u.values[at + j] *= f;
      }
    }
    double scale = 1.0;
    if (spec.op == SparseSumOperator::kClippedWeightedMean) {
      double sq = 0.0;
      for (double v : u.values) sq += v * v;
      const double norm = std::sqrt(sq);
      if (norm > spec.clip_norm) scale = spec.clip_norm / norm;
    }
    if (spec.clip.kind != core::ClipKind::kOff) {  // robust clip of the update's sent values
      double sq = 0.0, sent = 0.0;
      for (std::size_t i = 0; i < n; ++i) {
        sq += u.values[i] * u.values[i];
        sent += u.sent[i] ? 1.0 : 0.0;
      }
      const double norm = std::sqrt(sq);
      const double bound = spec.clip.kind == core::ClipKind::kNorm
                               ? spec.clip.bound
                               : spec.clip.bound * std::sqrt(sent);
      if (norm > bound) scale = bound / norm;
    }
    const double w = spec.op == SparseSumOperator::kSum ? 1.0 : c.weight;
    for (std::size_t i = 0; i < n; ++i) {
      numerator[i] += w * scale * u.values[i];
      if (u.sent[i]) {
        contributors[i] += c.weight;
        counts[i] += 1.0;
        present[i] = true;
      }
    }
    total += c.weight;
  }
  Reference r{std::vector<double>(n, 0.0), present};
  for (std::size_t i = 0; i < n; ++i) {
    switch (spec.op) {
      case SparseSumOperator::kSum:
        r.values[i] = numerator[i];
        break;
      case SparseSumOperator::kWeightedMean:
      case SparseSumOperator::kClippedWeightedMean:
        r.values[i] = total > 0 ? numerator[i] / total : 0.0;
        break;
      case SparseSumOperator::kMeanOverContributors:
        r.values[i] = contributors[i] > 0 ? numerator[i] / contributors[i] : 0.0;
        // min_contributors: an element fewer than k reports sent stays unchanged (a dense
        // update sends every element, so then all of them are zero).
        if (spec.min_contributors > 1 && counts[i] < static_cast<double>(spec.min_contributors)) {
          r.values[i] = 0.0;
          if (s.encoding != core::UpdateEncoding::kDense) r.present[i] = false;
        }
        break;
      case SparseSumOperator::kCount:
        r.values[i] = s.encoding == core::UpdateEncoding::kDense
                          ? static_cast<double>(s.clients.size())
                          : counts[i];
        break;
    }
  }
  return r;
}

// Asserts that `result` is in the scenario's encoding, canonical, holds exactly the reference's
// elements, and matches its values (exactly for count, else within the dtype's tolerance).
inline void check_against_reference(const core::Tensor& result, const Scenario& s,
                                    const core::OperatorSpec& spec) {
  const Reference ref = reference_result(s, spec);
  const std::size_t n = ref.values.size();
  REQUIRE(core::update_encoding_of(result) == s.encoding);
  if (const auto* coo = std::get_if<core::SparseTensor>(&result)) REQUIRE(core::is_canonical(*coo));
  if (const auto* rows = std::get_if<core::RowSparseTensor>(&result)) {
    REQUIRE(core::is_canonical(*rows));
  }
  const core::DType want = spec.op == core::SparseSumOperator::kCount ? core::DType::I64 : s.dtype;
  std::visit(
      [&](const auto& t) {
        if constexpr (std::is_same_v<std::decay_t<decltype(t)>, core::DenseTensor>) {
          REQUIRE(t.dtype() == want);
        } else {
          REQUIRE(t.values().dtype() == want);
          REQUIRE(t.dense_shape() == s.dense_shape);
        }
      },
      result);
  const DenseUpdate got = densify(result, n);
  for (std::size_t i = 0; i < n; ++i) {
    INFO("element " << i);
    REQUIRE(got.sent[i] == ref.present[i]);
    if (spec.op == core::SparseSumOperator::kCount) {
      REQUIRE(got.values[i] == ref.values[i]);
    } else {
      const double tol = s.dtype == core::DType::F32 ? 1e-5 : 1e-12;
      REQUIRE(std::abs(got.values[i] - ref.values[i]) <= tol * (1.0 + std::abs(ref.values[i])));
    }
  }
}

inline std::vector<core::OperatorSpec> all_operator_specs() {
  using core::SparseSumOperator;
  return {{SparseSumOperator::kSum, 0.0},
          {SparseSumOperator::kWeightedMean, 0.0},
          {SparseSumOperator::kMeanOverContributors, 0.0},
          {SparseSumOperator::kMeanOverContributors, 0.0, {}, 3},
          {SparseSumOperator::kCount, 0.0},
          {SparseSumOperator::kClippedWeightedMean, 0.7}};
}

// Every (operator, encoding) pair, operators outermost.
inline std::vector<std::pair<core::OperatorSpec, core::UpdateEncoding>> every_spec_and_encoding() {
  std::vector<std::pair<core::OperatorSpec, core::UpdateEncoding>> out;
  for (const core::OperatorSpec& spec : all_operator_specs()) {
    for (auto encoding : {core::UpdateEncoding::kDense, core::UpdateEncoding::kCoo,
                          core::UpdateEncoding::kRowSparse}) {
      out.emplace_back(spec, encoding);
    }
  }
  return out;
}

inline core::SparseSumAccumulator accumulate(const Scenario& s, const core::OperatorSpec& spec,
                                             core::AccumulatorOptions options = {}) {
  core::SparseSumAccumulator acc("t", spec, s.encoding, s.dtype, s.dense_shape, options);
  for (const ClientUpdate& c : s.clients) acc.add(c.tensor, c.weight);
  return acc;
}

// The property test every operator runs: on random scenarios (random shapes, 1 to 24 clients
// plus one run of 150, overlapping and disjoint index sets, duplicates) of every encoding and
// dtype, the result matches the dense reference, and the sparse, dense and automatic
// representations give bitwise-identical results.
inline void check_operator_properties(const core::OperatorSpec& spec, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (auto encoding : {core::UpdateEncoding::kDense, core::UpdateEncoding::kCoo,
                        core::UpdateEncoding::kRowSparse}) {
    // A row clip applies to row_sparse tensors only (the accumulator rejects it elsewhere).
    if (spec.row_clip > 0.0 && encoding != core::UpdateEncoding::kRowSparse) continue;
    for (auto dtype : {core::DType::F32, core::DType::F64}) {
      for (int trial = 0; trial < 9; ++trial) {
        const std::size_t clients =
            trial == 8 ? 150 : std::uniform_int_distribution<std::size_t>(1, 24)(rng);
        const Scenario s = random_scenario(rng, encoding, dtype, clients);
        INFO("encoding " << core::update_encoding_name(encoding) << ", dtype "
                         << core::dtype_name(dtype) << ", trial " << trial);
        const core::Tensor automatic = accumulate(s, spec).finalize();
        check_against_reference(automatic, s, spec);
        const core::Tensor sparse =
            accumulate(s, spec, {core::RepresentationPolicy::kSparse, 0}).finalize();
        const core::Tensor dense =
            accumulate(s, spec, {core::RepresentationPolicy::kDense, 0}).finalize();
        REQUIRE(sparse == automatic);
        REQUIRE(dense == automatic);
      }
    }
  }
}

}  // namespace fedleaf::test

namespace fedleaf {

// The names the aggregation tests share, declared once for all of them.
using core::ClipKind;
using core::DType;
using core::Representation;
using core::RepresentationPolicy;
using core::SparseSumOperator;
using core::UpdateClip;
using core::UpdateEncoding;
using test::MessageContains;

}  // namespace fedleaf
