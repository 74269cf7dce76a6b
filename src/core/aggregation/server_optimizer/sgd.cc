// sgd (FedAvg, FedAvgM; Reddi et al. 2021): m ← β·m + Δ;  x ← x + η·m. β = 0 keeps no m
// (x ← x + η·Δ), and η = 1 with β = 0 is FedAvg: x + Δ rounded once.
#include "core/aggregation/server_optimizer/server_optimizer_kind.h"

namespace fedleaf::core {
namespace {

constexpr std::size_t kLearningRate = 0, kMomentum = 1;

class Sgd final : public ServerOptimizerKind {
 public:
  std::string_view name() const override { return "sgd"; }
  std::vector<OptimizerSetting> settings() const override {
    return {{"learning_rate", 1.0, SettingRule::kRate}, {"momentum", 0.0, SettingRule::kDecay}};
  }
  std::vector<StateArray> state_arrays(const OptimizerSettings& s) const override {
    if (s[kMomentum] == 0.0) return {};
    return {{"momentum"}};
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
    const double eta = s[kLearningRate], beta = s[kMomentum];
    T* momentum = beta != 0.0 ? key.moments[0] : nullptr;
    std::uint64_t withheld = 0;
    for (std::size_t j = 0; j < key.width; ++j) {
      const double delta = static_cast<double>(key.delta[j]);
      const double m = momentum ? beta * static_cast<double>(momentum[j]) + delta : delta;
      const double x = static_cast<double>(key.x[j]) + eta * m;
      if (!fits<T>(x) || !fits<T>(m)) {
        ++withheld;
        continue;
      }
      key.x[j] = static_cast<T>(x);
      if (momentum) momentum[j] = static_cast<T>(m);
    }
    return withheld;
  }
};

}  // namespace

const ServerOptimizerKind& sgd_server_optimizer() {
  static const Sgd kind;
  return kind;
}

}  // namespace fedleaf::core
