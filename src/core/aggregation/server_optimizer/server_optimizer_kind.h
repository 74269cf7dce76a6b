// One kind of server optimizer, as a file under server_optimizer/ states it: its name, its
// settings with their defaults and rules, the arrays it keeps per tensor it moves, and how one
// key moves. The kinds are listed in optimizer_table.cc, the only place a kind is named;
// ServerOptimizer (server_optimizer.h) does the rest the same way for every kind: parsing the
// settings by their rules, the laziness over keys, count aggregates, the state's arrays and their
// checks on load.
//
//   class Sgd final : public ServerOptimizerKind { ... };      // sgd.cc
//   const ServerOptimizerKind& sgd_server_optimizer();         // listed in optimizer_table.cc
//
// Every rule computes in f64 from the stored values and rounds each result once to the
// parameter's dtype; an element whose new value (or new moment) would not be finite in that dtype
// keeps its old value and state and is counted as withheld (fits<T>).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

namespace fedleaf::core {

enum class SettingRule {
  kRate,   // a number in (0, 1e6]: a learning rate, an ε (larger is a typo, not a setting)
  kDecay,  // a number in [0, 1): a momentum, a β
  kFlag,   // true or false, kept as 1 or 0
};

struct OptimizerSetting {
  std::string_view name;
  double fallback;
  SettingRule rule;
};

// The settings of a spec, in the order of its kind's settings().
using OptimizerSettings = std::vector<double>;

// One array a kind keeps per tensor it moves, named `<tensor>@<suffix>`: a moment (the
// parameter's dtype and shape) or the step counts (I64, one per key: [1] for a dense encoding,
// [rows] for row_sparse, [elements] for coo).
struct StateArray {
  std::string_view suffix;
  bool steps = false;
  bool non_negative = false;  // load_state refuses a negative element (a second moment)
};

// One key of one tensor while it moves: `width` elements of the parameter, of each moment array
// (in the order of state_arrays(), step arrays left out) and of the round's delta Δ, and the
// key's step count when the kind keeps one.
template <class T>
struct KeyMove {
  T* x;
  T* const* moments;
  std::int64_t* steps;
  const T* delta;
  std::size_t width;
};

class ServerOptimizerKind {
 public:
  virtual ~ServerOptimizerKind() = default;
  virtual std::string_view name() const = 0;
  // Every setting, "learning_rate" first.
  virtual std::vector<OptimizerSetting> settings() const = 0;
  // The arrays kept per moved tensor under `settings` (none: the kind keeps no state then).
  virtual std::vector<StateArray> state_arrays(const OptimizerSettings& settings) const = 0;
  // Moves one key by its delta; returns how many of its elements kept their old value.
  virtual std::uint64_t move(const OptimizerSettings& settings,
                             const KeyMove<float>& key) const = 0;
  virtual std::uint64_t move(const OptimizerSettings& settings,
                             const KeyMove<double>& key) const = 0;
};

// Whether `value` is finite in T (a double that fits T's range).
template <class T>
bool fits(double value) {
  return std::isfinite(value) &&
         std::abs(value) <= static_cast<double>(std::numeric_limits<T>::max());
}

}  // namespace fedleaf::core
