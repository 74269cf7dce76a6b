// The sparse embedding_bag path against a dense reference: the batch as a dense
// [batch, vocab] matrix X (combiner scales folded in), forward X E, backward Xᵀ G.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "core/data/batch.h"
#include "core/model/embedding_bag.h"
#include "tests/core/error_matchers.h"
#include "tests/core/train/train_test_util.h"

using namespace fedleaf::core;
using fedleaf::test::MessageContains;

namespace {

// n values uniform in [-1, 1).
std::vector<float> uniform_values(SeededRandom& rng, std::size_t n) {
  std::vector<float> values(n);
  for (float& v : values) v = 2.0f * rng.uniform() - 1.0f;
  return values;
}

// All n examples of the gatherer's dataset as one batch, in the shuffled order of `seed`.
Batch shuffled_batch(BatchGatherer& gather, std::size_t n, std::uint64_t seed) {
  const auto order = shuffled_order(n, seed);
  return gather.gather(order.data(), order.size());
}

std::vector<double> dense_inputs(const Batch& b, std::size_t vocab, Combiner combiner) {
  std::vector<double> x(b.size * vocab, 0.0);
  for (std::size_t e = 0; e < b.size; ++e) {
    double abs_sum = 0.0, square_sum = 0.0;
    for (std::uint32_t j = b.offsets[e]; j < b.offsets[e + 1]; ++j) {
      const double w = b.weights ? b.weights[j] : 1.0;
      x[e * vocab + b.ids[j]] += w;
      abs_sum += std::fabs(w);
      square_sum += w * w;
    }
    double scale = 1.0;
    if (combiner == Combiner::kMean) scale = abs_sum > 0 ? 1.0 / abs_sum : 0.0;
    if (combiner == Combiner::kSqrtn) scale = square_sum > 0 ? 1.0 / std::sqrt(square_sum) : 0.0;
    for (std::size_t v = 0; v < vocab; ++v) x[e * vocab + v] *= scale;
  }
  return x;
}

}  // namespace

TEST_CASE("embedding_bag_sparse_path_equals_dense_reference", "[embedding_bag]") {
  const std::size_t vocab = 40, dim = 5;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    for (Combiner combiner : {Combiner::kSum, Combiner::kMean, Combiner::kSqrtn}) {
      INFO("seed " << seed << " combiner " << static_cast<int>(combiner));
      const bool weighted = seed % 2 == 0;
      const Dataset data = fedleaf::test::random_sparse_dataset(seed, 9, vocab, 7, weighted, 2);
      SeededRandom rng(seed + 100);
      std::vector<float> table = uniform_values(rng, vocab * dim);
      std::vector<float> grad_out = uniform_values(rng, data.size() * dim);
      BatchGatherer gather(data, BatchIds::kGlobal);
      const Batch batch = shuffled_batch(gather, data.size(), seed);
      EmbeddingBag emb("emb", table.data(), vocab, dim, combiner);

      std::vector<float> out(data.size() * dim);
      emb.forward(batch, out.data());
      ParameterGradient grad;
      grad.row_size = dim;
      emb.backward(batch, grad_out.data(), grad);

      const std::vector<double> x = dense_inputs(batch, vocab, combiner);
      for (std::size_t e = 0; e < batch.size; ++e) {
        for (std::size_t k = 0; k < dim; ++k) {
          double expected = 0.0;
          for (std::size_t v = 0; v < vocab; ++v) expected += x[e * vocab + v] * table[v * dim + k];
          REQUIRE(out[e * dim + k] == Approx(expected).margin(1e-5));
        }
      }
      // Touched rows: each id of the batch once, increasing.
      std::vector<std::uint32_t> distinct(batch.ids, batch.ids + batch.offsets[batch.size]);
      std::sort(distinct.begin(), distinct.end());
      distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
      CHECK(grad.touched_rows == distinct);
      REQUIRE(grad.values.size() == grad.touched_rows.size() * dim);
      for (std::size_t v = 0; v < vocab; ++v) {
        const auto it = std::find(grad.touched_rows.begin(), grad.touched_rows.end(), v);
        const bool touched = it != grad.touched_rows.end();
        for (std::size_t k = 0; k < dim; ++k) {
          double expected = 0.0;
          for (std::size_t e = 0; e < batch.size; ++e) {
            expected += x[e * vocab + v] * grad_out[e * dim + k];
          }
          const double got =
              touched ? grad.values[(it - grad.touched_rows.begin()) * dim + k] : 0.0;
          REQUIRE(got == Approx(expected).margin(1e-5));
        }
      }
    }
  }
}

TEST_CASE("embedding_bag_gives_zero_for_examples_without_ids", "[embedding_bag]") {
  const Dataset data = Dataset::from_csr({0, 0, 1}, {2}, {}, {0, 1}, 4);
  std::vector<float> table(4 * 2, 1.0f);
  BatchGatherer gather(data, BatchIds::kGlobal);
  const auto order = fedleaf::test::identity_order(2);
  const Batch batch = gather.gather(order.data(), 2);
  EmbeddingBag emb("emb", table.data(), 4, 2, Combiner::kMean);
  std::vector<float> out(4, -1.0f);

  emb.forward(batch, out.data());

  CHECK(out == std::vector<float>{0, 0, 1, 1});
}

TEST_CASE("embedding_bag_rejects_ids_outside_its_table", "[embedding_bag]") {
  const Dataset data = Dataset::from_csr({0, 1}, {7}, {}, {0}, 8);
  std::vector<float> table(4 * 2, 1.0f);
  BatchGatherer gather(data, BatchIds::kGlobal);
  const auto order = fedleaf::test::identity_order(1);
  EmbeddingBag emb("emb", table.data(), 4, 2, Combiner::kSum);
  std::vector<float> out(2);
  CHECK_THROWS_MATCHES(
      emb.forward(gather.gather(order.data(), 1), out.data()), fedleaf::InvalidInput,
      MessageContains("embedding_bag 'emb': id 7 is not below the table's 4 rows"));
  // A batch vouching for a bound above the table's rows is still checked.
  Batch vouched = gather.gather(order.data(), 1);
  vouched.ids_below = 8;
  CHECK_THROWS_MATCHES(emb.forward(vouched, out.data()), fedleaf::InvalidInput,
                       MessageContains("id 7 is not below the table's 4 rows"));
}

TEST_CASE("embedding_bag_backward_needs_the_batch_of_the_last_forward", "[embedding_bag]") {
  const Dataset data = Dataset::from_csr({0, 2, 3}, {1, 3, 1}, {}, {0, 1}, 4);
  std::vector<float> table(4 * 2, 1.0f);
  const auto order = fedleaf::test::identity_order(2);
  EmbeddingBag emb("emb", table.data(), 4, 2, Combiner::kSum);
  BatchGatherer gather(data, BatchIds::kGlobal);
  const Batch batch = gather.gather(order.data(), 2);
  std::vector<float> grad_out(4, 1.0f);
  ParameterGradient grad;
  CHECK_THROWS_MATCHES(emb.backward(batch, grad_out.data(), grad), fedleaf::InvalidInput,
                       MessageContains("backward needs the batch of the last forward"));

  std::vector<float> out(4);
  emb.forward(batch, out.data());
  emb.backward(batch, grad_out.data(), grad);
  CHECK(grad.touched_rows == std::vector<std::uint32_t>{1, 3});
  CHECK(grad.values == std::vector<float>{2, 2, 1, 1});
  // A second backward of the same batch starts from an empty row map again.
  emb.backward(batch, grad_out.data(), grad);
  CHECK(grad.touched_rows == std::vector<std::uint32_t>{1, 3});
  CHECK(grad.values == std::vector<float>{2, 2, 1, 1});

  BatchGatherer other_gather(data, BatchIds::kGlobal);
  const Batch other = other_gather.gather(order.data(), 1);
  CHECK_THROWS_MATCHES(emb.backward(other, grad_out.data(), grad), fedleaf::InvalidInput,
                       MessageContains("embedding_bag 'emb': backward needs the batch"));
}

TEST_CASE("embedding_bag_backward_sgd_equals_backward_then_an_sgd_step", "[embedding_bag]") {
  const std::size_t vocab = 30;
  for (std::size_t dim : {1, 3, 8}) {
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      INFO("dim " << dim << " seed " << seed);
      const Combiner combiner = seed % 2 ? Combiner::kSqrtn : Combiner::kSum;
      const Dataset data = fedleaf::test::random_sparse_dataset(seed, 12, vocab, 9, seed > 2, 2);
      SeededRandom rng(seed + 50);
      std::vector<float> table = uniform_values(rng, vocab * dim);
      std::vector<float> grad_out = uniform_values(rng, data.size() * dim);
      BatchGatherer gather(data, BatchIds::kGlobal);
      const Batch batch = shuffled_batch(gather, data.size(), seed);
      std::vector<float> stepped = table;
      EmbeddingBag reference("emb", table.data(), vocab, dim, combiner);
      EmbeddingBag fused("emb", stepped.data(), vocab, dim, combiner);
      std::vector<float> out(data.size() * dim);
      reference.forward(batch, out.data());
      fused.forward(batch, out.data());
      ParameterGradient grad;

      reference.backward(batch, grad_out.data(), grad);
      fused.backward_sgd(batch, grad_out.data(), 0.25f);

      for (std::size_t r = 0; r < grad.touched_rows.size(); ++r) {
        for (std::size_t k = 0; k < dim; ++k) {
          table[grad.touched_rows[r] * dim + k] -= 0.25f * grad.values[r * dim + k];
        }
      }
      for (std::size_t i = 0; i < table.size(); ++i) {
        REQUIRE(stepped[i] == Approx(table[i]).margin(1e-6));
      }
    }
  }
}

TEST_CASE("embedding_bag_backward_sgd_needs_the_batch_of_the_last_forward", "[embedding_bag]") {
  const Dataset data = Dataset::from_csr({0, 2, 3}, {1, 3, 1}, {}, {0, 1}, 4);
  std::vector<float> table(4, 1.0f);
  const auto order = fedleaf::test::identity_order(2);
  EmbeddingBag emb("emb", table.data(), 4, 1, Combiner::kSum);
  BatchGatherer gather(data, BatchIds::kGlobal);
  const Batch batch = gather.gather(order.data(), 2);
  const std::vector<float> grad_out{1.0f, -2.0f};

  CHECK_THROWS_MATCHES(emb.backward_sgd(batch, grad_out.data(), 0.5f), fedleaf::InvalidInput,
                       MessageContains("backward needs the batch of the last forward"));
  std::vector<float> out(2);
  emb.forward(batch, out.data());
  emb.backward_sgd(batch, grad_out.data(), 0.5f);

  // Row 1: -0.5·1 then -0.5·(-2); row 3: -0.5·1.
  CHECK(table == std::vector<float>{1.0f, 1.5f, 1.0f, 0.5f});
}

TEST_CASE("embedding_bag_bias_is_added_to_every_example_and_its_gradient_sums_the_batch",
          "[embedding_bag]") {
  // A Keras Dense on a sparse row: Σ_j value_j W[id_j] + b, and b alone for an empty row.
  for (std::size_t dim : {1, 3, 8}) {
    INFO("dim " << dim);
    const std::size_t vocab = 20;
    const Dataset data = fedleaf::test::random_sparse_dataset(dim, 11, vocab, 2, true, 2);
    SeededRandom rng(dim + 7);
    std::vector<float> table = uniform_values(rng, vocab * dim);
    const std::vector<float> bias = uniform_values(rng, dim);
    const std::vector<float> grad_out = uniform_values(rng, data.size() * dim);
    BatchGatherer gather(data, BatchIds::kGlobal);
    const Batch batch = shuffled_batch(gather, data.size(), dim);
    EmbeddingBag plain("emb", table.data(), vocab, dim, Combiner::kSum);
    EmbeddingBag biased("emb", table.data(), vocab, dim, Combiner::kSum, bias.data());
    std::vector<float> without(data.size() * dim), with(data.size() * dim);
    plain.forward(batch, without.data());
    biased.forward(batch, with.data());
    bool empty_row = false;
    for (std::size_t e = 0; e < batch.size; ++e) {
      empty_row |= batch.offsets[e] == batch.offsets[e + 1];
      for (std::size_t k = 0; k < dim; ++k) {
        CHECK(with[e * dim + k] == without[e * dim + k] + bias[k]);
      }
    }
    CHECK(empty_row);  // the dataset has an example without ids, which gets the bias alone

    std::vector<float> gb(dim, 0.5f);
    biased.backward_bias(batch.size, grad_out.data(), gb.data());
    for (std::size_t k = 0; k < dim; ++k) {
      double expected = 0.5;
      for (std::size_t e = 0; e < batch.size; ++e) expected += grad_out[e * dim + k];
      CHECK(gb[k] == Approx(expected).margin(1e-6));
    }
    // No bias, no gradient: the buffer is left alone.
    std::vector<float> untouched(dim, 0.5f);
    plain.backward_bias(batch.size, grad_out.data(), untouched.data());
    CHECK(untouched == std::vector<float>(dim, 0.5f));
  }
}
