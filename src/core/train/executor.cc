#include "core/train/executor.h"

#include <cmath>
#include <cstdio>

#include "core/data/seeded_random.h"
#include "core/error.h"
#include "core/features/murmur3.h"
#include "core/model/model.h"
#include "core/train/forward_over_dataset.h"
#include "core/train/metrics.h"
#include "core/train/plan.h"
#include "core/train/training_session.h"
#include "core/wire/result_format.h"
#include "core/wire/safetensors.h"

namespace fedleaf::core {

std::vector<std::uint8_t> evaluate(const Plan& plan, const std::uint8_t* model_bytes,
                                   std::size_t model_size, const Dataset& dataset,
                                   const ExecuteOptions& options) {
  const bool binary =
      plan.model.loss == LossType::kSigmoidCrossEntropy ||
      (plan.model.loss == LossType::kSoftmaxCrossEntropy && plan.model.output_width == 2);
  std::vector<float> scores;
  double loss = 0.0;
  std::size_t correct = 0;
  forward_over_dataset(
      plan, model_bytes, model_size, dataset,
      [&](const Model& model, std::size_t, std::size_t count, const LossSums& sums) {
        loss += sums.loss;
        correct += sums.correct;
        if (!binary) return;
        for (std::size_t b = 0; b < count; ++b) {
          scores.push_back(
              binary_score(plan.model.loss, model.outputs() + b * model.output_width()));
        }
      });
  const double n = static_cast<double>(dataset.size());
  ResultReport report;
  report.kind = ResultKind::kEvaluate;
  report.num_examples = dataset.size();
  report.loss = loss / n;
  report.accuracy = static_cast<double>(correct) / n;
  if (binary) {
    const double auc = binary_auc(scores, dataset.labels());
    if (!std::isnan(auc)) report.auc = auc;
  }
  report.task_id = options.task_id;
  return write_safetensors({}, result_metadata(report));
}

std::vector<std::uint8_t> execute(const std::shared_ptr<const Plan>& plan,
                                  const std::uint8_t* model, std::size_t model_size,
                                  const Dataset& dataset, const ExecuteOptions& options) {
  if (plan->kind == PlanKind::kEvaluate) {
    return evaluate(*plan, model, model_size, dataset, options);
  }
  TrainingSession session(plan, model, model_size, dataset);
  while (session.step()) {
  }
  return session.result(options.task_id);
}

std::vector<std::uint8_t> execute(const std::string& plan_json, const std::uint8_t* model,
                                  std::size_t model_size, const Dataset& dataset,
                                  const ExecuteOptions& options) {
  return execute(std::make_shared<const Plan>(parse_plan(plan_json)), model, model_size, dataset,
                 options);
}

std::vector<std::uint8_t> initialize_model(const std::string& plan_json, std::uint64_t seed) {
  return initialize_model_from(parse_plan(plan_json), seed);
}

std::vector<std::uint8_t> initialize_model_from(const Plan& plan, std::uint64_t seed) {
  NamedTensors model;
  for (const ParameterSpec& p : parameter_specs(plan.model)) {
    DenseTensor t = DenseTensor::zeros(DType::F32, p.shape);
    float* v = t.data<float>();
    SeededRandom rng(mix_seed(seed, murmur3_32(p.name, 0)));
    float bound = 0.0f;
    if (p.initializer == Initializer::kUniform) bound = p.init_scale;
    if (p.initializer == Initializer::kGlorotUniform) {
      bound = std::sqrt(6.0f / static_cast<float>(p.fan_in + p.fan_out));
    }
    if (bound > 0.0f) {
      for (std::size_t i = 0; i < t.size(); ++i) v[i] = (2.0f * rng.uniform() - 1.0f) * bound;
    }
    model.emplace(p.name, std::move(t));
  }
  return write_safetensors(model);
}

}  // namespace fedleaf::core
