// The model:select request body, both forms: any byte string either parses or raises
// fedleaf::InvalidInput; what parses has ascending ids, survives a binary round trip, and — once
// the rules accept it against a fixed model — answers exactly the model's rows. Sanitizers catch
// reads outside the body or the model. The first byte picks the form (even: JSON, odd: binary).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/aggregation/updates/select_rules.h"
#include "core/wire/safetensors.h"
#include "core/wire/select_answer.h"
#include "core/wire/select_request.h"

namespace {

using namespace fedleaf::core;

struct Model {
  std::vector<std::uint8_t> bytes;
  SafetensorsIndex index;
  UpdatePlan plan;
  NamedTensors tensors;
};

Model make_model() {
  Model m;
  xt::xarray<float> emb = xt::xarray<float>::from_shape({64, 3});
  for (std::size_t i = 0; i < emb.size(); ++i) emb.data()[i] = static_cast<float>(i);
  xt::xarray<double> deep = xt::xarray<double>::from_shape({5, 2, 2});
  for (std::size_t i = 0; i < deep.size(); ++i) deep.data()[i] = -static_cast<double>(i);
  m.tensors.emplace("emb/weight", DenseTensor(std::move(emb)));
  m.tensors.emplace("e", DenseTensor(std::move(deep)));
  m.tensors.emplace("out/weight", DenseTensor::zeros(DType::F32, {3, 2}));
  m.bytes = write_safetensors(m.tensors, {{"origin", "fuzz"}});
  m.index = index_safetensors(m.bytes.data(), m.bytes.size());
  m.plan = parse_update_plan(
      R"({"updates": {"emb/weight": {"encoding": "row_sparse", "aggregator": "sum",
                                     "max_select_rows": 40},
                      "e": {"encoding": "row_sparse", "aggregator": "sum"},
                      "out/weight": {"encoding": "dense", "aggregator": "sum"}}})");
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Model model = make_model();
  if (size == 0) return 0;
  const SelectBodyFormat format = data[0] % 2 ? SelectBodyFormat::kBinary : SelectBodyFormat::kJson;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  SelectRequest request;
  try {
    request = parse_select_request(body, format);
  } catch (const fedleaf::InvalidInput&) {
    return 0;
  }
  for (const auto& [name, ids] : request.rows) {
    for (std::size_t i = 1; i < ids.size(); ++i) {
      if (ids[i - 1] >= ids[i]) std::abort();
    }
  }
  if (parse_select_request(encode_select_request(request), SelectBodyFormat::kBinary).rows !=
      request.rows) {
    std::abort();
  }
  try {
    check_select_request(request, model.index, model.plan);
  } catch (const fedleaf::InvalidInput&) {
    return 0;
  }
  const std::vector<std::uint8_t> answer = write_select_answer(
      model.bytes.data(), model.bytes.size(), model.index, request, {{"round", "0"}});
  const SafetensorsFile file = read_safetensors(answer);
  for (const auto& [name, ids] : request.rows) {
    const auto& rows = std::get<RowSparseTensor>(file.tensors.at(name));
    const auto& dense = std::get<DenseTensor>(model.tensors.at(name));
    const std::size_t row_bytes = rows.row_size() * dtype_size(dense.dtype());
    if (rows.num_rows() != ids.size()) std::abort();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (rows.indices()(i) != ids[i] ||
          std::memcmp(rows.values().raw_data() + i * row_bytes,
                      dense.raw_data() + ids[i] * row_bytes, row_bytes) != 0) {
        std::abort();
      }
    }
  }
  return 0;
}
