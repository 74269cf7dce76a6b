#include "core/data/svmlight.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace fedleaf::core {
namespace {

[[noreturn]] void fail(std::size_t line, const std::string& what) {
  throw InvalidInput("svmlight line " + std::to_string(line) + ": " + what);
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// Decimal float of a bounded token, locale-independent for the inputs svmlight uses: strtod
// runs in the "C" locale because the core never changes the locale.
bool parse_double(std::string_view token, double& out) {
  if (token.empty() || token.size() > 64) return false;
  char buf[65];
  token.copy(buf, token.size());
  buf[token.size()] = '\0';
  char* end = nullptr;
  out = std::strtod(buf, &end);
  return end == buf + token.size();
}

bool parse_integer(std::string_view token, std::int64_t& out) {
  if (!token.empty() && token.front() == '+') token.remove_prefix(1);
  const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), out);
  return ec == std::errc() && ptr == token.data() + token.size() && !token.empty();
}

std::int32_t parse_label(std::string_view token, std::size_t line) {
  double value = 0;
  if (!parse_double(token, value) || !std::isfinite(value) || std::floor(value) != value ||
      std::fabs(value) > 2147483647.0) {
    fail(line, "label '" + std::string(token) + "' is not an integer");
  }
  if (value == -1.0) return 0;
  if (value < 0) fail(line, "label " + std::string(token) + " is negative (only -1 is allowed)");
  return static_cast<std::int32_t>(value);
}

}  // namespace

Dataset parse_svmlight(std::string_view text, const SvmlightOptions& options) {
  if (options.index_base != 0 && options.index_base != 1) {
    throw InvalidInput("svmlight: index_base must be 0 or 1, got " +
                       std::to_string(options.index_base));
  }
  std::vector<std::uint32_t> offsets{0};
  std::vector<std::uint32_t> ids;
  std::vector<float> weights;
  std::vector<std::int32_t> labels;
  std::size_t line_number = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_number;
    const std::size_t hash = line.find('#');
    if (hash != std::string_view::npos) line = line.substr(0, hash);

    bool have_label = false;
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && is_blank(line[i])) ++i;
      if (i == line.size()) break;
      std::size_t j = i;
      while (j < line.size() && !is_blank(line[j])) ++j;
      const std::string_view field = line.substr(i, j - i);
      i = j;
      if (!have_label) {
        labels.push_back(parse_label(field, line_number));
        have_label = true;
        continue;
      }
      const std::size_t colon = field.find(':');
      if (colon == std::string_view::npos) {
        fail(line_number, "expected 'index:value', got '" + std::string(field) + "'");
      }
      const std::string_view index_text = field.substr(0, colon);
      const std::string_view value_text = field.substr(colon + 1);
      if (index_text == "qid") continue;
      std::int64_t index = 0;
      if (!parse_integer(index_text, index)) {
        fail(line_number, "index '" + std::string(index_text) + "' is not an integer");
      }
      if (index < options.index_base || index - options.index_base > 0xfffffffell) {
        fail(line_number, "index " + std::to_string(index) + " is outside [" +
                              std::to_string(options.index_base) + ", 2^32 - 1)");
      }
      double value = 0;
      if (!parse_double(value_text, value) || !std::isfinite(static_cast<float>(value))) {
        fail(line_number, "value '" + std::string(value_text) + "' of index " +
                              std::to_string(index) + " is not a finite number");
      }
      const auto id = static_cast<std::uint32_t>(index - options.index_base);
      if (options.num_features != 0 && id >= options.num_features) {
        fail(line_number, "index " + std::to_string(index) + " gives id " + std::to_string(id) +
                              ", not below num_features " + std::to_string(options.num_features));
      }
      ids.push_back(id);
      weights.push_back(static_cast<float>(value));
    }
    if (have_label) {
      if (ids.size() >= 0xffffffffull) fail(line_number, "more than 2^32 - 1 nonzeros");
      offsets.push_back(static_cast<std::uint32_t>(ids.size()));
    }
  }
  return Dataset::from_csr(std::move(offsets), std::move(ids), std::move(weights),
                           std::move(labels), options.num_features);
}

}  // namespace fedleaf::core
