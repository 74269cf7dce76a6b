// adagrad (FedAdagrad; Reddi et al. 2021, "Adaptive Federated Optimization", Algorithm 2):
//   m ← β1·m + (1 − β1)·Δ   (β1 = 0, the default, keeps no m: m = Δ, Duchi et al.'s Adagrad)
//   v ← v + Δ²
//   x ← x + η·m / (√v + ε)
// Adagrad over Δ is Adagrad over the pseudo-gradient g = −Δ with m negated (v is the same).
// ε is the paper's τ. v starts at 0 (the initial state is zeros), so a key's first step is
// η·Δ/(|Δ| + ε) ≈ η·sign(Δ), and later ones shrink as its squared deltas add up; v grows only on
// the rounds that touch the key (server_optimizer.h, "Laziness"). Defaults η = 0.01, ε = 1e-3,
// as adam's.
#include <cmath>

#include "core/aggregation/server_optimizer/server_optimizer_kind.h"

namespace fedleaf::core {
namespace {

constexpr std::size_t kLearningRate = 0, kBeta1 = 1, kEpsilon = 2;

class Adagrad final : public ServerOptimizerKind {
 public:
  std::string_view name() const override { return "adagrad"; }
  std::vector<OptimizerSetting> settings() const override {
    return {{"learning_rate", 0.01, SettingRule::kRate},
            {"beta1", 0.0, SettingRule::kDecay},
            {"epsilon", 1e-3, SettingRule::kRate}};
  }
  std::vector<StateArray> state_arrays(const OptimizerSettings& s) const override {
    if (s[kBeta1] == 0.0) return {{"v", false, true}};
    return {{"m"}, {"v", false, true}};
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
    const double eta = s[kLearningRate], b1 = s[kBeta1], eps = s[kEpsilon];
    T* m_ = b1 != 0.0 ? key.moments[0] : nullptr;
    T* v_ = key.moments[b1 != 0.0 ? 1 : 0];
    std::uint64_t withheld = 0;
    for (std::size_t j = 0; j < key.width; ++j) {
      const double delta = static_cast<double>(key.delta[j]);
      const double m = m_ ? b1 * static_cast<double>(m_[j]) + (1.0 - b1) * delta : delta;
      const double v = static_cast<double>(v_[j]) + delta * delta;
      const double x = static_cast<double>(key.x[j]) + eta * m / (std::sqrt(v) + eps);
      if (!fits<T>(x) || !fits<T>(m) || !fits<T>(v)) {
        ++withheld;
        continue;
      }
      key.x[j] = static_cast<T>(x);
      if (m_) m_[j] = static_cast<T>(m);
      v_[j] = static_cast<T>(v);
    }
    return withheld;
  }
};

}  // namespace

const ServerOptimizerKind& adagrad_server_optimizer() {
  static const Adagrad kind;
  return kind;
}

}  // namespace fedleaf::core
