// safetensors_tool fixture OUT   — writes the cross-check fixture (the tensors of fixtureTensors()
//                                  in tests/e2e/browser/executor_cases.mjs)
// safetensors_tool roundtrip IN OUT — decodes IN natively and encodes it again into OUT
// Exit 1 with the decoder's message on invalid input.
#include <fstream>
#include <iostream>
#include <iterator>

#include "core/wire/safetensors.h"

using namespace fedleaf::core;

namespace {

NamedTensors fixture() {
  NamedTensors t;
  t.emplace("dense/f32", DenseTensor(xt::xarray<float>{{1.5f, -2.f, 0.25f}, {3.f, 4.f, -0.f}}));
  t.emplace("dense/f64", DenseTensor(xt::xarray<double>{1e-300, 2.5}));
  t.emplace("dense/i32", DenseTensor(xt::xarray<std::int32_t>{-1, 7, 2147483647}));
  t.emplace("dense/i64", DenseTensor(xt::xarray<std::int64_t>{-9007199254740993LL}));
  t.emplace("dense/u8", DenseTensor(xt::xarray<std::uint8_t>{0, 128, 255}));
  t.emplace("coo", SparseTensor(CooIndices{{0, 2}, {3, 1}},
                                DenseTensor(xt::xarray<float>{0.5f, -1.f}), {4, 3}));
  RowSparseTensor rows(RowIndices{1, 5}, DenseTensor(xt::xarray<float>{{1.f, 2.f}, {3.f, 4.f}}),
                       {8, 2});
  rows.set_index_dtype(DType::I32);
  t.emplace("emb/weight", rows);
  return t;
}

std::vector<std::uint8_t> read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(std::string("cannot open ") + path);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_file(const char* path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error(std::string("cannot write ") + path);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "fixture" && argc == 3) {
      write_file(argv[2], write_safetensors(fixture(), {{"producer", "native"}}));
      return 0;
    }
    if (cmd == "roundtrip" && argc == 4) {
      SafetensorsFile f = read_safetensors(read_file(argv[2]));
      write_file(argv[3], write_safetensors(f.tensors, f.metadata));
      return 0;
    }
    std::cerr << "usage: safetensors_tool fixture OUT | roundtrip IN OUT\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
