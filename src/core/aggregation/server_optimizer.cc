#include "core/aggregation/server_optimizer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "core/aggregation/operators/operator_table.h"
#include "core/error.h"
#include "core/json/json_known_fields.h"
#include "core/json/plan_json.h"
#include "core/tensor/linear_index.h"
#include "core/text/text_format.h"
#include "core/wire/server_optimizer_state.h"

namespace fedleaf::core {
namespace {

using nlohmann::json;
constexpr double kMaxRate = 1e6;  // η and ε: larger is a typo, not a setting

double number_field(const json& object, const std::string& path, const char* key, double fallback,
                    const char* rule, bool (*ok)(double)) {
  const json* v = plan_json::find_field(object, key);
  if (v == nullptr) return fallback;
  const std::string where = path + "." + key;
  if (!v->is_number()) plan_json::fail(where, std::string("expected a number ") + rule);
  const double x = v->get<double>();
  if (!std::isfinite(x) || !ok(x)) {
    plan_json::fail(where, std::string("expected a number ") + rule + ", got " + v->dump());
  }
  return x;
}

bool positive_rate(double x) { return x > 0 && x <= kMaxRate; }
bool decay(double x) { return x >= 0 && x < 1; }

const char* type_name(ServerOptimizerType type) {
  return type == ServerOptimizerType::kSgd ? "sgd" : "adam";
}

// Whether `value` is finite in T (a double that fits T's range).
template <class T>
bool fits(double value) {
  return std::isfinite(value) &&
         std::abs(value) <= static_cast<double>(std::numeric_limits<T>::max());
}

// A tensor the optimizer moves: its parameter, and where its keys are.
struct Moved {
  std::string name;
  UpdateEncoding encoding = UpdateEncoding::kDense;
  DType dtype = DType::F32;
  Shape shape;
  std::uint64_t keys = 1;  // Adam step counters: 1 (dense), rows (row_sparse), elements (coo)
};

Moved moved_tensor(const std::string& name, UpdateEncoding encoding, const NamedTensors& model,
                   const std::string& where) {
  const auto it = model.find(name);
  const auto* param = it == model.end() ? nullptr : std::get_if<DenseTensor>(&it->second);
  if (param == nullptr || (param->dtype() != DType::F32 && param->dtype() != DType::F64)) {
    throw InvalidInput(where + ": the model has no dense F32 or F64 tensor " + in_quotes(name));
  }
  Moved m{name, encoding, param->dtype(), param->shape(), 1};
  if (encoding == UpdateEncoding::kRowSparse) {
    m.keys = m.shape.empty() ? 1 : m.shape[0];
  } else if (encoding == UpdateEncoding::kCoo) {
    m.keys = param->size();
  }
  return m;
}

// The arrays the optimizer keeps for `m`, as (name, dtype, shape).
struct ArraySpec {
  std::string name;
  DType dtype;
  Shape shape;
};
std::vector<ArraySpec> state_arrays(const ServerOptimizerSpec& spec, const Moved& m) {
  if (spec.type == ServerOptimizerType::kSgd) {
    if (spec.momentum == 0.0) return {};
    return {{m.name + "@momentum", m.dtype, m.shape}};
  }
  return {{m.name + "@m", m.dtype, m.shape},
          {m.name + "@v", m.dtype, m.shape},
          {m.name + "@steps", DType::I64, {static_cast<std::size_t>(m.keys)}}};
}

// `state` empty (the initial state: zeros, returned filled) or holding exactly the arrays of
// `moved`; InvalidInput naming the array otherwise.
NamedTensors checked_state(const ServerOptimizerSpec& spec, const std::vector<Moved>& moved,
                           const NamedTensors& state, const std::string& where) {
  std::vector<ArraySpec> expected;
  for (const Moved& m : moved) {
    for (ArraySpec& a : state_arrays(spec, m)) expected.push_back(std::move(a));
  }
  if (state.empty()) {
    NamedTensors zeros;
    for (const ArraySpec& a : expected) zeros.emplace(a.name, DenseTensor::zeros(a.dtype, a.shape));
    return zeros;
  }
  for (const auto& [name, tensor] : state) {
    const bool known = std::any_of(expected.begin(), expected.end(),
                                   [&n = name](const ArraySpec& a) { return a.name == n; });
    if (!known) {
      throw InvalidInput(where + ": array " + in_quotes(name) + " belongs to no tensor the " +
                         type_name(spec.type) + " optimizer moves");
    }
  }
  for (const ArraySpec& a : expected) {
    const auto it = state.find(a.name);
    if (it == state.end())
      throw InvalidInput(where + ": array " + in_quotes(a.name) + " is missing");
    const auto* dense = std::get_if<DenseTensor>(&it->second);
    if (dense == nullptr || dense->dtype() != a.dtype || dense->shape() != a.shape) {
      throw InvalidInput(where + ": array " + in_quotes(a.name) + " must be a dense " +
                         std::string(dtype_name(a.dtype)) + " array of shape " +
                         shape_to_string(a.shape));
    }
  }
  return state;
}

// Adds a count aggregate as next_model() adds it (RoundAggregator): in f64, kept when not finite.
template <class T>
std::uint64_t add_counts(T* x, const Tensor& delta, const std::vector<std::uint64_t>& strides) {
  std::uint64_t withheld = 0;
  const auto add = [&](std::size_t at, std::int64_t count) {
    const double sum = static_cast<double>(x[at]) + static_cast<double>(count);
    if (fits<T>(sum)) {
      x[at] = static_cast<T>(sum);
    } else {
      ++withheld;
    }
  };
  if (const auto* dense = std::get_if<DenseTensor>(&delta)) {
    const auto* v = dense->data<std::int64_t>();
    for (std::size_t i = 0; i < dense->size(); ++i) add(i, v[i]);
  } else if (const auto* coo = std::get_if<SparseTensor>(&delta)) {
    const auto* v = coo->values().data<std::int64_t>();
    for (std::size_t e = 0; e < coo->nnz(); ++e) {
      add(static_cast<std::size_t>(linear_index(coo->indices(), e, strides)), v[e]);
    }
  } else {
    const auto& rows = std::get<RowSparseTensor>(delta);
    const auto* v = rows.values().data<std::int64_t>();
    const std::size_t w = rows.row_size();
    for (std::size_t e = 0; e < rows.num_rows(); ++e) {
      const auto row = static_cast<std::size_t>(rows.indices()(e));
      for (std::size_t j = 0; j < w; ++j) add(row * w + j, v[e * w + j]);
    }
  }
  return withheld;
}

// The update rule of one tensor of dtype T, key by key (the header's rules).
template <class T>
class Mover {
 public:
  Mover(const ServerOptimizerSpec& spec, DenseTensor& x, NamedTensors& state,
        const std::string& name)
      : spec_(spec), x_(x.data<T>()) {
    if (spec.type == ServerOptimizerType::kAdam) {
      m_ = std::get<DenseTensor>(state.at(name + "@m")).data<T>();
      v_ = std::get<DenseTensor>(state.at(name + "@v")).data<T>();
      steps_ = std::get<DenseTensor>(state.at(name + "@steps")).data<std::int64_t>();
    } else if (spec.momentum != 0.0) {
      m_ = std::get<DenseTensor>(state.at(name + "@momentum")).data<T>();
    }
  }

  // Moves the `width` elements from `at` by the deltas `d`; `key` is their step counter.
  void move(std::size_t key, std::size_t at, const T* d, std::size_t width) {
    const double eta = spec_.learning_rate;
    if (spec_.type == ServerOptimizerType::kSgd) {
      const double beta = spec_.momentum;
      for (std::size_t j = 0; j < width; ++j) {
        const double delta = static_cast<double>(d[j]);
        const double m = m_ ? beta * static_cast<double>(m_[at + j]) + delta : delta;
        const double x = static_cast<double>(x_[at + j]) + eta * m;
        if (!fits<T>(x) || !fits<T>(m)) {
          ++withheld_;
          continue;
        }
        x_[at + j] = static_cast<T>(x);
        if (m_) m_[at + j] = static_cast<T>(m);
      }
      return;
    }
    const std::int64_t t = steps_[key] + 1;
    steps_[key] = t;
    const double b1 = spec_.beta1, b2 = spec_.beta2;
    const double c1 = spec_.bias_correction ? 1.0 - std::pow(b1, static_cast<double>(t)) : 1.0;
    const double c2 = spec_.bias_correction ? 1.0 - std::pow(b2, static_cast<double>(t)) : 1.0;
    for (std::size_t j = 0; j < width; ++j) {
      const double delta = static_cast<double>(d[j]);
      const double m = b1 * static_cast<double>(m_[at + j]) + (1.0 - b1) * delta;
      const double v = b2 * static_cast<double>(v_[at + j]) + (1.0 - b2) * delta * delta;
      const double x =
          static_cast<double>(x_[at + j]) + eta * (m / c1) / (std::sqrt(v / c2) + spec_.epsilon);
      if (!fits<T>(x) || !fits<T>(m) || !fits<T>(v)) {
        ++withheld_;
        continue;
      }
      x_[at + j] = static_cast<T>(x);
      m_[at + j] = static_cast<T>(m);
      v_[at + j] = static_cast<T>(v);
    }
  }

  // Every key `delta` holds (the aggregate's encoding).
  void move_all(const Tensor& delta, const std::vector<std::uint64_t>& strides) {
    if (const auto* dense = std::get_if<DenseTensor>(&delta)) {
      move(0, 0, dense->data<T>(), dense->size());
    } else if (const auto* coo = std::get_if<SparseTensor>(&delta)) {
      const T* v = coo->values().data<T>();
      for (std::size_t e = 0; e < coo->nnz(); ++e) {
        const auto key = static_cast<std::size_t>(linear_index(coo->indices(), e, strides));
        move(key, key, v + e, 1);
      }
    } else {
      const auto& rows = std::get<RowSparseTensor>(delta);
      const T* v = rows.values().data<T>();
      const std::size_t w = rows.row_size();
      for (std::size_t e = 0; e < rows.num_rows(); ++e) {
        const auto row = static_cast<std::size_t>(rows.indices()(e));
        move(row, row * w, v + e * w, w);
      }
    }
  }

  std::uint64_t withheld() const { return withheld_; }

 private:
  const ServerOptimizerSpec& spec_;
  T* x_;
  T* m_ = nullptr;
  T* v_ = nullptr;
  std::int64_t* steps_ = nullptr;
  std::uint64_t withheld_ = 0;
};

DenseShape dense_shape_of(const Tensor& t) {
  if (const auto* d = std::get_if<DenseTensor>(&t)) {
    DenseShape shape;
    for (std::size_t s : d->shape()) shape.push_back(static_cast<std::int64_t>(s));
    return shape;
  }
  if (const auto* coo = std::get_if<SparseTensor>(&t)) return coo->dense_shape();
  return std::get<RowSparseTensor>(t).dense_shape();
}

}  // namespace

bool ServerOptimizerSpec::operator==(const ServerOptimizerSpec& o) const {
  return type == o.type && learning_rate == o.learning_rate && momentum == o.momentum &&
         beta1 == o.beta1 && beta2 == o.beta2 && epsilon == o.epsilon &&
         bias_correction == o.bias_correction;
}

ServerOptimizerSpec default_server_optimizer(ServerOptimizerType type) {
  ServerOptimizerSpec spec;
  spec.type = type;
  if (type == ServerOptimizerType::kAdam) spec.learning_rate = 0.01;
  return spec;
}

bool is_fedavg(const ServerOptimizerSpec& spec) {
  return spec.type == ServerOptimizerType::kSgd && spec.learning_rate == 1.0 &&
         spec.momentum == 0.0;
}

ServerOptimizerSpec parse_server_optimizer(const json& object, const std::string& path) {
  if (!object.is_object()) plan_json::fail(path, "expected an object with a \"type\"");
  if (!object.contains("type")) plan_json::fail(path + ".type", "missing (sgd or adam)");
  const auto type = plan_json::get_choice<ServerOptimizerType>(
      object, path, "type", nullptr, "server optimizer",
      {{"sgd", ServerOptimizerType::kSgd}, {"adam", ServerOptimizerType::kAdam}});
  ServerOptimizerSpec spec = default_server_optimizer(type);
  if (type == ServerOptimizerType::kSgd) {
    check_known_fields(object, path, {"type", "learning_rate", "momentum"});
    spec.momentum = number_field(object, path, "momentum", spec.momentum, "in [0, 1)", decay);
  } else {
    check_known_fields(object, path,
                       {"type", "learning_rate", "beta1", "beta2", "epsilon", "bias_correction"});
    spec.beta1 = number_field(object, path, "beta1", spec.beta1, "in [0, 1)", decay);
    spec.beta2 = number_field(object, path, "beta2", spec.beta2, "in [0, 1)", decay);
    spec.epsilon =
        number_field(object, path, "epsilon", spec.epsilon, "in (0, 1000000]", positive_rate);
    spec.bias_correction = plan_json::get_bool(object, path, "bias_correction", true);
  }
  spec.learning_rate = number_field(object, path, "learning_rate", spec.learning_rate,
                                    "in (0, 1000000]", positive_rate);
  return spec;
}

std::string server_optimizer_json(const ServerOptimizerSpec& spec) {
  json out = {{"type", type_name(spec.type)}, {"learning_rate", spec.learning_rate}};
  if (spec.type == ServerOptimizerType::kSgd) {
    out["momentum"] = spec.momentum;
  } else {
    out["beta1"] = spec.beta1;
    out["beta2"] = spec.beta2;
    out["epsilon"] = spec.epsilon;
    out["bias_correction"] = spec.bias_correction;
  }
  return out.dump();
}

ServerOptimizerSpec server_optimizer_from_text(const std::string& text, const std::string& path) {
  if (text.empty()) return {};
  const json object = json::parse(text, nullptr, false);
  if (object.is_discarded()) plan_json::fail(path, "not valid JSON");
  return parse_server_optimizer(object, path);
}

ServerOptimizer::ServerOptimizer(ServerOptimizerSpec spec) : spec_(spec) {}

bool ServerOptimizer::stateful() const {
  return spec_.type == ServerOptimizerType::kAdam || spec_.momentum != 0.0;
}

ServerOptimizerStep ServerOptimizer::step(const NamedTensors& model,
                                          const std::vector<TensorAggregate>& aggregates,
                                          const NamedTensors& state) const {
  const std::string where = "server optimizer";
  std::vector<Moved> moved;
  for (const TensorAggregate& a : aggregates) {
    const Moved m = moved_tensor(a.name, a.encoding, model, where);
    DenseShape shape;
    for (std::size_t s : m.shape) shape.push_back(static_cast<std::int64_t>(s));
    if (dense_shape_of(a.delta) != shape) {
      throw InvalidInput(where + ": the aggregate of " + in_quotes(a.name) + " has dense_shape " +
                         shape_to_string(dense_shape_of(a.delta)) + ", the model's tensor " +
                         shape_to_string(shape));
    }
    if (!a.counts) moved.push_back(m);
  }
  ServerOptimizerStep out;
  if (stateful()) out.state = checked_state(spec_, moved, state, where + " state");
  if (!stateful() && !state.empty()) {
    throw InvalidInput(where + " state: sgd without momentum keeps none, but it holds " +
                       std::to_string(state.size()) + " arrays");
  }
  out.model = model;
  for (const TensorAggregate& a : aggregates) {
    if (a.withheld) continue;
    auto& x = std::get<DenseTensor>(out.model.at(a.name));
    const std::vector<std::uint64_t> strides = *row_major_strides(dense_shape_of(a.delta));
    const auto apply = [&](auto tag) {
      using T = decltype(tag);
      if (a.counts) {
        out.withheld_nonfinite += add_counts<T>(x.data<T>(), a.delta, strides);
        return;
      }
      Mover<T> mover(spec_, x, out.state, a.name);
      mover.move_all(a.delta, strides);
      out.withheld_nonfinite += mover.withheld();
    };
    if (x.dtype() == DType::F32) {
      apply(float{});
    } else {
      apply(double{});
    }
  }
  return out;
}

std::vector<std::uint8_t> ServerOptimizer::save_state(const NamedTensors& state) const {
  return write_server_optimizer_state(type_name(spec_.type), state);
}

NamedTensors ServerOptimizer::load_state(const std::uint8_t* data, std::size_t size,
                                         const UpdatePlan& plan, const NamedTensors& model) const {
  const std::string where = "server optimizer state";
  if (size == 0) return {};
  NamedTensors arrays = read_server_optimizer_state(data, size, type_name(spec_.type));
  if (!stateful()) {
    if (!arrays.empty()) {
      throw InvalidInput(where + ": sgd without momentum keeps none, but it holds " +
                         std::to_string(arrays.size()) + " arrays");
    }
    return {};
  }
  std::vector<Moved> moved;
  for (const TensorUpdatePlan& t : plan.tensors) {
    if (operator_rules(t.op.op).finalizes_to_counts(t.encoding)) continue;
    moved.push_back(moved_tensor(t.name, t.encoding, model, where));
  }
  if (arrays.empty()) return {};
  NamedTensors state = checked_state(spec_, moved, arrays, where);
  for (const Moved& m : moved) {
    if (spec_.type != ServerOptimizerType::kAdam) continue;
    const auto& steps = std::get<DenseTensor>(state.at(m.name + "@steps"));
    const std::int64_t* s = steps.data<std::int64_t>();
    for (std::size_t k = 0; k < steps.size(); ++k) {
      if (s[k] < 0)
        throw InvalidInput(where + ": array " + in_quotes(m.name + "@steps") +
                           " holds a negative step count");
    }
    const auto& v = std::get<DenseTensor>(state.at(m.name + "@v"));
    const auto negative = [&](auto tag) {
      using T = decltype(tag);
      const T* p = v.data<T>();
      return std::any_of(p, p + v.size(), [](T e) { return e < 0; });
    };
    if (v.dtype() == DType::F32 ? negative(float{}) : negative(double{})) {
      throw InvalidInput(where + ": array " + in_quotes(m.name + "@v") +
                         " holds a negative second moment");
    }
  }
  return state;
}

}  // namespace fedleaf::core
