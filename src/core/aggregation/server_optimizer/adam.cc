// adam (FedAdam; Reddi et al. 2021, with Kingma & Ba's bias correction by default):
//   t ← t + 1;  m ← β1·m + (1 − β1)·Δ;  v ← β2·v + (1 − β2)·Δ²
//   m̂ = m / (1 − β1^t),  v̂ = v / (1 − β2^t)   (bias_correction; else m̂ = m, v̂ = v)
//   x ← x + η·m̂ / (√v̂ + ε)
// Adam over Δ is Adam over the pseudo-gradient g = −Δ with m negated (v is the same). With
// bias_correction false and ε = τ this is the paper's Algorithm 2 exactly; with it, the first step
// of a key moves it by about η·sign(Δ), not (1 − β1)/√(1 − β2) times that. t is per key (the
// rounds that touched it: server_optimizer.h, "Laziness"). Defaults: the paper's η = 0.01,
// β1 = 0.9, β2 = 0.99, ε = 1e-3 (it found τ ≥ 1e-3 better than Adam's 1e-8).
#include <cmath>

#include "core/aggregation/server_optimizer/server_optimizer_kind.h"

namespace fedleaf::core {
namespace {

constexpr std::size_t kLearningRate = 0, kBeta1 = 1, kBeta2 = 2, kEpsilon = 3, kBiasCorrection = 4;

class Adam final : public ServerOptimizerKind {
 public:
  std::string_view name() const override { return "adam"; }
  std::vector<OptimizerSetting> settings() const override {
    return {{"learning_rate", 0.01, SettingRule::kRate},
            {"beta1", 0.9, SettingRule::kDecay},
            {"beta2", 0.99, SettingRule::kDecay},
            {"epsilon", 1e-3, SettingRule::kRate},
            {"bias_correction", 1.0, SettingRule::kFlag}};
  }
  std::vector<StateArray> state_arrays(const OptimizerSettings&) const override {
    return {{"m"}, {"v", false, true}, {"steps", true}};
  }
  std::uint64_t move(const OptimizerSettings& s, const KeyMove<float>& key) const override {
    return move_key(s, key);
  }
  std::uint64_t move(const OptimizerSettings& s, const KeyMove<double>& key) const override {
    return move_key(s, key);
  }

 private:
  template <class T>
  static std::uint64_t move_key(const OptimizerSettings& s, const KeyMove<T>& key) {
    const std::int64_t t = *key.steps + 1;
    *key.steps = t;
    const double eta = s[kLearningRate], b1 = s[kBeta1], b2 = s[kBeta2], eps = s[kEpsilon];
    const bool correct = s[kBiasCorrection] != 0.0;
    const double c1 = correct ? 1.0 - std::pow(b1, static_cast<double>(t)) : 1.0;
    const double c2 = correct ? 1.0 - std::pow(b2, static_cast<double>(t)) : 1.0;
    T* m_ = key.moments[0];
    T* v_ = key.moments[1];
    std::uint64_t withheld = 0;
    for (std::size_t j = 0; j < key.width; ++j) {
      const double delta = static_cast<double>(key.delta[j]);
      const double m = b1 * static_cast<double>(m_[j]) + (1.0 - b1) * delta;
      const double v = b2 * static_cast<double>(v_[j]) + (1.0 - b2) * delta * delta;
      const double x = static_cast<double>(key.x[j]) + eta * (m / c1) / (std::sqrt(v / c2) + eps);
      if (!fits<T>(x) || !fits<T>(m) || !fits<T>(v)) {
        ++withheld;
        continue;
      }
      key.x[j] = static_cast<T>(x);
      m_[j] = static_cast<T>(m);
      v_[j] = static_cast<T>(v);
    }
    return withheld;
  }
};

}  // namespace

const ServerOptimizerKind& adam_server_optimizer() {
  static const Adam kind;
  return kind;
}

}  // namespace fedleaf::core
