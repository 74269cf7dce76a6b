#include "core/aggregation/server_optimizer/server_optimizer.h"

#include <algorithm>
#include <cmath>

#include "core/aggregation/operators/operator_table.h"
#include "core/aggregation/server_optimizer/optimizer_table.h"
#include "core/error.h"
#include "core/json/json_known_fields.h"
#include "core/json/plan_json.h"
#include "core/tensor/linear_index.h"
#include "core/text/text_format.h"
#include "core/wire/server_optimizer_state.h"

namespace fedleaf::core {
namespace {

using nlohmann::json;
constexpr double kMaxRate = 1e6;

// A setting's value from `object`, by its rule; `fallback` when absent.
double read_setting(const json& object, const std::string& path, const OptimizerSetting& s) {
  const std::string key(s.name);
  if (s.rule == SettingRule::kFlag) {
    return plan_json::get_bool(object, path, key.c_str(), s.fallback != 0.0) ? 1.0 : 0.0;
  }
  const json* v = plan_json::find_field(object, key.c_str());
  if (v == nullptr) return s.fallback;
  const bool rate = s.rule == SettingRule::kRate;
  const char* rule = rate ? "in (0, 1000000]" : "in [0, 1)";
  const std::string where = path + "." + key;
  if (!v->is_number()) plan_json::fail(where, std::string("expected a number ") + rule);
  const double x = v->get<double>();
  const bool ok = rate ? x > 0 && x <= kMaxRate : x >= 0 && x < 1;
  if (!std::isfinite(x) || !ok) {
    plan_json::fail(where, std::string("expected a number ") + rule + ", got " + v->dump());
  }
  return x;
}

// A tensor the optimizer moves: its parameter, and where its keys are.
struct Moved {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  std::uint64_t keys = 1;  // step counters: 1 (dense), rows (row_sparse), elements (coo)
};

Moved moved_tensor(const std::string& name, UpdateEncoding encoding, const NamedTensors& model,
                   const std::string& where) {
  const auto it = model.find(name);
  const auto* param = it == model.end() ? nullptr : std::get_if<DenseTensor>(&it->second);
  if (param == nullptr || (param->dtype() != DType::F32 && param->dtype() != DType::F64)) {
    throw InvalidInput(where + ": the model has no dense F32 or F64 tensor " + in_quotes(name));
  }
  Moved m{name, param->dtype(), param->shape(), 1};
  if (encoding == UpdateEncoding::kRowSparse) {
    m.keys = m.shape.empty() ? 1 : m.shape[0];
  } else if (encoding == UpdateEncoding::kCoo) {
    m.keys = param->size();
  }
  return m;
}

std::string array_name(const Moved& m, const StateArray& a) {
  return m.name + "@" + std::string(a.suffix);
}

// `state` empty (the initial state: zeros, returned filled) or holding exactly the arrays of
// `moved`; InvalidInput naming the array otherwise.
NamedTensors checked_state(const ServerOptimizerSpec& spec, const std::vector<StateArray>& arrays,
                           const std::vector<Moved>& moved, const NamedTensors& state,
                           const std::string& where) {
  struct Expected {
    std::string name;
    DType dtype;
    Shape shape;
  };
  std::vector<Expected> expected;
  for (const Moved& m : moved) {
    for (const StateArray& a : arrays) {
      expected.push_back(
          a.steps ? Expected{array_name(m, a), DType::I64, {static_cast<std::size_t>(m.keys)}}
                  : Expected{array_name(m, a), m.dtype, m.shape});
    }
  }
  if (state.empty()) {
    NamedTensors zeros;
    for (const Expected& a : expected) zeros.emplace(a.name, DenseTensor::zeros(a.dtype, a.shape));
    return zeros;
  }
  for (const auto& [name, tensor] : state) {
    const bool known = std::any_of(expected.begin(), expected.end(),
                                   [&n = name](const Expected& a) { return a.name == n; });
    if (!known) {
      throw InvalidInput(where + ": array " + in_quotes(name) + " belongs to no tensor the " +
                         std::string(spec.type()) + " optimizer moves");
    }
  }
  for (const Expected& a : expected) {
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

// Moves every key `delta` holds (the aggregate's encoding) of one tensor of dtype T by the kind's
// rule; returns the elements kept at their old value.
template <class T>
std::uint64_t move_tensor(const ServerOptimizerSpec& spec, const std::vector<StateArray>& arrays,
                          DenseTensor& x, NamedTensors& state, const std::string& name,
                          const Tensor& delta, const std::vector<std::uint64_t>& strides) {
  std::vector<T*> moments;
  std::int64_t* steps = nullptr;
  for (const StateArray& a : arrays) {
    auto& array = std::get<DenseTensor>(state.at(name + "@" + std::string(a.suffix)));
    if (a.steps) {
      steps = array.data<std::int64_t>();
    } else {
      moments.push_back(array.data<T>());
    }
  }
  std::vector<T*> at_key(moments.size());
  T* param = x.data<T>();
  std::uint64_t withheld = 0;
  const auto move = [&](std::size_t key, std::size_t at, const T* d, std::size_t width) {
    for (std::size_t i = 0; i < moments.size(); ++i) at_key[i] = moments[i] + at;
    const KeyMove<T> k{param + at, at_key.data(), steps ? steps + key : nullptr, d, width};
    withheld += spec.kind->move(spec.settings, k);
  };
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
  return withheld;
}

DenseShape dense_shape_of(const Tensor& t) {
  if (const auto* d = std::get_if<DenseTensor>(&t)) {
    DenseShape shape;
    for (std::size_t s : d->shape()) shape.push_back(static_cast<std::int64_t>(s));
    return shape;
  }
  if (const auto* coo = std::get_if<SparseTensor>(&t)) return coo->dense_shape();
  return std::get<RowSparseTensor>(t).dense_shape();
}

const ServerOptimizerKind& fedavg_kind() { return *find_server_optimizer_kind("sgd"); }

OptimizerSettings defaults_of(const ServerOptimizerKind& kind) {
  OptimizerSettings out;
  for (const OptimizerSetting& s : kind.settings()) out.push_back(s.fallback);
  return out;
}

}  // namespace

ServerOptimizerSpec::ServerOptimizerSpec()
    : kind(&fedavg_kind()), settings(defaults_of(fedavg_kind())) {}

ServerOptimizerSpec::ServerOptimizerSpec(const ServerOptimizerKind& k, OptimizerSettings s)
    : kind(&k), settings(std::move(s)) {}

double ServerOptimizerSpec::setting(std::string_view name) const {
  const std::vector<OptimizerSetting> all = kind->settings();
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].name == name) return settings.at(i);
  }
  throw std::out_of_range("server optimizer " + std::string(type()) + " has no setting " +
                          std::string(name));
}

bool ServerOptimizerSpec::operator==(const ServerOptimizerSpec& o) const {
  return kind == o.kind && settings == o.settings;
}

bool is_fedavg(const ServerOptimizerSpec& spec) { return spec == ServerOptimizerSpec(); }

ServerOptimizerSpec parse_server_optimizer(const json& object, const std::string& path) {
  const std::string names = server_optimizer_kind_names();
  if (!object.is_object()) plan_json::fail(path, "expected an object with a \"type\"");
  if (!object.contains("type")) plan_json::fail(path + ".type", "missing (" + names + ")");
  const std::string type = plan_json::get_string(object, path, "type");
  const ServerOptimizerKind* kind = find_server_optimizer_kind(type);
  if (kind == nullptr) {
    plan_json::fail(path + ".type",
                    "unknown server optimizer " + in_quotes(type) + " (expected " + names + ")");
  }
  const std::vector<OptimizerSetting> settings = kind->settings();
  std::vector<std::string> fields = {"type"};
  for (const OptimizerSetting& s : settings) fields.emplace_back(s.name);
  check_known_fields(object, path, fields);
  OptimizerSettings values;
  for (const OptimizerSetting& s : settings) values.push_back(read_setting(object, path, s));
  return {*kind, std::move(values)};
}

std::string server_optimizer_json(const ServerOptimizerSpec& spec) {
  json out = {{"type", std::string(spec.type())}};
  const std::vector<OptimizerSetting> settings = spec.kind->settings();
  for (std::size_t i = 0; i < settings.size(); ++i) {
    const std::string key(settings[i].name);
    if (settings[i].rule == SettingRule::kFlag) {
      out[key] = spec.settings[i] != 0.0;
    } else {
      out[key] = spec.settings[i];
    }
  }
  return out.dump();
}

ServerOptimizerSpec server_optimizer_from_text(const std::string& text, const std::string& path) {
  if (text.empty()) return {};
  const json object = json::parse(text, nullptr, false);
  if (object.is_discarded()) plan_json::fail(path, "not valid JSON");
  return parse_server_optimizer(object, path);
}

ServerOptimizer::ServerOptimizer(ServerOptimizerSpec spec)
    : spec_(std::move(spec)), arrays_(spec_.kind->state_arrays(spec_.settings)) {}

bool ServerOptimizer::stateful() const { return !arrays_.empty(); }

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
  if (stateful()) out.state = checked_state(spec_, arrays_, moved, state, where + " state");
  if (!stateful() && !state.empty()) {
    throw InvalidInput(where + " state: " + std::string(spec_.type()) +
                       " keeps none with these settings, but it holds " +
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
      } else {
        out.withheld_nonfinite +=
            move_tensor<T>(spec_, arrays_, x, out.state, a.name, a.delta, strides);
      }
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
  return write_server_optimizer_state(spec_.type(), state);
}

NamedTensors ServerOptimizer::load_state(const std::uint8_t* data, std::size_t size,
                                         const UpdatePlan& plan, const NamedTensors& model) const {
  const std::string where = "server optimizer state";
  if (size == 0) return {};
  NamedTensors arrays = read_server_optimizer_state(data, size, spec_.type());
  if (!stateful()) {
    if (!arrays.empty()) {
      throw InvalidInput(where + ": " + std::string(spec_.type()) +
                         " keeps none with these settings, but it holds " +
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
  NamedTensors state = checked_state(spec_, arrays_, moved, arrays, where);
  for (const Moved& m : moved) {
    for (const StateArray& a : arrays_) {
      const auto& array = std::get<DenseTensor>(state.at(array_name(m, a)));
      if (a.steps) {
        const std::int64_t* s = array.data<std::int64_t>();
        if (std::any_of(s, s + array.size(), [](std::int64_t e) { return e < 0; })) {
          throw InvalidInput(where + ": array " + in_quotes(array_name(m, a)) +
                             " holds a negative step count");
        }
      } else if (a.non_negative) {
        const auto negative = [&](auto tag) {
          using T = decltype(tag);
          const T* p = array.data<T>();
          return std::any_of(p, p + array.size(), [](T e) { return e < 0; });
        };
        if (array.dtype() == DType::F32 ? negative(float{}) : negative(double{})) {
          throw InvalidInput(where + ": array " + in_quotes(array_name(m, a)) +
                             " holds a negative second moment");
        }
      }
    }
  }
  return state;
}

}  // namespace fedleaf::core
