#include "core/wire/select_request.h"

#include <cctype>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/text/text_format.h"

namespace fedleaf::core {
namespace {

using nlohmann::json;

const std::string kWhere = "select body";

// Appends `id` to the ids of `name`, enforcing the ascending rule.
void append_id(std::vector<std::uint32_t>& ids, std::uint64_t id, const std::string& name) {
  if (id > std::numeric_limits<std::uint32_t>::max()) {
    throw InvalidInput(kWhere + ": tensor " + in_quotes(name) + ": row id " + std::to_string(id) +
                       " is not a row id (integers 0..4294967295)");
  }
  if (!ids.empty() && id <= ids.back()) {
    throw InvalidInput(kWhere + ": tensor " + in_quotes(name) + ": row ids must be sorted " +
                       "strictly ascending (no duplicates): " + std::to_string(id) +
                       " at position " + std::to_string(ids.size()) + " follows " +
                       std::to_string(ids.back()));
  }
  ids.push_back(static_cast<std::uint32_t>(id));
}

std::vector<std::uint32_t>& start_tensor(SelectRequest& request, const std::string& name) {
  if (name.empty()) throw InvalidInput(kWhere + ": a tensor name is empty");
  const auto [it, inserted] = request.rows.try_emplace(name);
  if (!inserted) {
    throw InvalidInput(kWhere + ": tensor " + in_quotes(name) + " is listed twice");
  }
  return it->second;
}

// Streams {"tensors": {"<name>": [ids...], ...}} into a SelectRequest; anything else throws.
class JsonSelectHandler : public nlohmann::json_sax<json> {
 public:
  explicit JsonSelectHandler(SelectRequest& out) : out_(out) {}

  bool start_object(std::size_t) override {
    if (state_ == State::kStart) {
      state_ = State::kTop;
    } else if (state_ == State::kTensorsValue) {
      state_ = State::kTensors;
    } else {
      unexpected("an object");
    }
    return true;
  }
  bool key(string_t& key) override {
    if (state_ == State::kTop) {
      if (key != "tensors") {
        throw InvalidInput(kWhere + ": unknown field " + in_quotes(key) +
                           " (expected {\"tensors\": {\"<name>\": [row ids]}})");
      }
      if (seen_tensors_) throw InvalidInput(kWhere + ": field 'tensors' appears twice");
      seen_tensors_ = true;
      state_ = State::kTensorsValue;
    } else {
      ids_ = &start_tensor(out_, key);
      name_ = key;
      state_ = State::kIdsValue;
    }
    return true;
  }
  bool start_array(std::size_t) override {
    if (state_ != State::kIdsValue) unexpected("an array");
    state_ = State::kIds;
    return true;
  }
  bool number_unsigned(number_unsigned_t value) override {
    if (state_ != State::kIds) unexpected("a number");
    append_id(*ids_, value, name_);
    return true;
  }
  bool number_integer(number_integer_t value) override {
    if (state_ != State::kIds) unexpected("a number");
    throw InvalidInput(kWhere + ": tensor " + in_quotes(name_) + ": row id " +
                       std::to_string(value) + " is not a row id (integers 0..4294967295)");
  }
  bool number_float(number_float_t, const string_t& text) override {
    if (state_ != State::kIds) unexpected("a number");
    throw InvalidInput(kWhere + ": tensor " + in_quotes(name_) + ": row id " + text +
                       " is not a row id (integers 0..4294967295)");
  }
  bool end_array() override {
    state_ = State::kTensors;
    return true;
  }
  bool end_object() override {
    state_ = state_ == State::kTensors ? State::kTop : State::kEnd;
    return true;
  }
  bool null() override { unexpected("null"); }
  bool boolean(bool) override { unexpected("a boolean"); }
  bool string(string_t&) override { unexpected("a string"); }
  bool binary(binary_t&) override { unexpected("binary data"); }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception&) override {
    throw InvalidInput(kWhere + ": not valid JSON (at byte " + std::to_string(position) + ")");
  }

  void finish() const {
    if (state_ != State::kEnd || !seen_tensors_) {
      throw InvalidInput(kWhere + ": needs a field 'tensors' (expected " +
                         "{\"tensors\": {\"<name>\": [row ids]}})");
    }
  }

 private:
  // Where the parser stands: the next event each state allows is the only one accepted.
  enum class State { kStart, kTop, kTensorsValue, kTensors, kIdsValue, kIds, kEnd };

  [[noreturn]] void unexpected(const char* what) const {
    std::string place = "the body";
    if (state_ == State::kTensorsValue) place = "'tensors' (an object of tensor names)";
    if (state_ == State::kIdsValue || state_ == State::kIds) {
      place = "tensor " + in_quotes(name_) + " (an array of row ids)";
    }
    if (state_ == State::kTop || state_ == State::kTensors) place = "an object key";
    throw InvalidInput(kWhere + ": found " + what + " where " + place +
                       " belongs (expected {\"tensors\": {\"<name>\": [row ids]}})");
  }

  SelectRequest& out_;
  State state_ = State::kStart;
  bool seen_tensors_ = false;
  std::vector<std::uint32_t>* ids_ = nullptr;
  std::string name_;
};

std::uint64_t read_le(const unsigned char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

SelectRequest parse_binary(std::string_view body) {
  SelectRequest request;
  const auto* p = reinterpret_cast<const unsigned char*>(body.data());
  std::size_t pos = 0;
  const std::size_t size = body.size();
  while (pos < size) {
    const std::string at = kWhere + ": record at byte " + std::to_string(pos);
    if (size - pos < 2) throw InvalidInput(at + ": truncated name length (needs 2 bytes)");
    const auto name_length = static_cast<std::size_t>(read_le(p + pos, 2));
    pos += 2;
    if (size - pos < name_length) {
      throw InvalidInput(at + ": name of " + std::to_string(name_length) + " bytes runs past " +
                         "the end of the body");
    }
    std::string name(body.substr(pos, name_length));
    pos += name_length;
    try {
      (void)json(name).dump(-1, ' ', false, json::error_handler_t::strict);
    } catch (const json::exception&) {
      throw InvalidInput(at + ": tensor name is not valid UTF-8");
    }
    std::vector<std::uint32_t>& ids = start_tensor(request, name);
    if (size - pos < 4) {
      throw InvalidInput(at + ": tensor " + in_quotes(name) + ": truncated count (needs 4 bytes)");
    }
    const std::uint64_t count = read_le(p + pos, 4);
    pos += 4;
    if ((size - pos) / 4 < count) {
      throw InvalidInput(at + ": tensor " + in_quotes(name) + ": " + std::to_string(count) +
                         " row ids run past the end of the body");
    }
    ids.reserve(static_cast<std::size_t>(count));
    for (std::uint64_t i = 0; i < count; ++i, pos += 4) append_id(ids, read_le(p + pos, 4), name);
  }
  return request;
}

}  // namespace

SelectBodyFormat select_body_format(std::string_view content_type) {
  std::string media(content_type.substr(0, content_type.find(';')));
  while (!media.empty() && (media.back() == ' ' || media.back() == '\t')) media.pop_back();
  std::size_t first = 0;
  while (first < media.size() && (media[first] == ' ' || media[first] == '\t')) ++first;
  media.erase(0, first);
  for (char& c : media) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (media == kSelectJsonContentType) return SelectBodyFormat::kJson;
  if (media == kSelectBinaryContentType) return SelectBodyFormat::kBinary;
  throw InvalidInput(kWhere + ": Content-Type must be " + std::string(kSelectJsonContentType) +
                     " or " + std::string(kSelectBinaryContentType) + ", got " +
                     in_quotes(content_type));
}

SelectRequest parse_select_request(std::string_view body, SelectBodyFormat format) {
  if (format == SelectBodyFormat::kBinary) return parse_binary(body);
  SelectRequest request;
  JsonSelectHandler handler(request);
  json::sax_parse(body.begin(), body.end(), &handler);
  handler.finish();
  return request;
}

std::string encode_select_request(const SelectRequest& request) {
  std::string out;
  const auto put = [&out](std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  };
  for (const auto& [name, ids] : request.rows) {
    if (name.size() > std::numeric_limits<std::uint16_t>::max()) {
      throw InvalidInput("select request: tensor name of " + std::to_string(name.size()) +
                         " bytes does not fit the u16 name length");
    }
    put(name.size(), 2);
    out += name;
    put(ids.size(), 4);
    for (const std::uint32_t id : ids) put(id, 4);
  }
  return out;
}

}  // namespace fedleaf::core
