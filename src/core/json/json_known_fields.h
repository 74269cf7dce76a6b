// The one rule for fields fedleaf does not know in a JSON object from outside (plans, population
// specs): refused, naming the field and the fields the object may have — skipped, a typo
// ("learning_rte", "clients_per_rnd") would run with the default, silently.
//
//   inline constexpr std::array kTrainFields{"optimizer", "epochs", "batch_size"};
//   check_known_fields(train, "plan.train", kTrainFields);
//   // InvalidInput "plan.train: unknown field 'epoch' (the fields are optimizer, epochs,
//   batch_size)"
//
// A plan's objects keep their field lists (and a choice field's names) as such named constants,
// so that the parser's check and the plan's schema export (core/train/plan_schema.h) read one
// list.
#pragma once

#include <array>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fedleaf::core {

// A view of an object's field names, held by a constant std::array (or a braced list, for the
// call that takes one).
class FieldList {
 public:
  constexpr FieldList(const char* const* names, std::size_t size) : begin_(names), size_(size) {}
  template <std::size_t N>
  constexpr FieldList(
      const std::array<const char*, N>& names)  // NOLINT(google-explicit-constructor)
      : begin_(names.data()), size_(N) {}
  constexpr const char* const* begin() const { return begin_; }
  constexpr const char* const* end() const { return begin_ + size_; }
  constexpr std::size_t size() const { return size_; }

 private:
  const char* const* begin_;
  std::size_t size_;
};

void check_known_fields(const nlohmann::json& object, const std::string& path, FieldList known);

inline void check_known_fields(const nlohmann::json& object, const std::string& path,
                               std::initializer_list<const char*> known) {
  check_known_fields(object, path, FieldList(known.begin(), known.size()));
}

// The same for fields known only at run time (a server optimizer kind's settings).
void check_known_fields(const nlohmann::json& object, const std::string& path,
                        const std::vector<std::string>& known);

// Whether `key` is one of `known`.
bool is_known_field(const std::string& key, FieldList known);

// The names of a constant std::array of {name, value} pairs (what plan_json::get_choice reads a
// field with) as a constant array a FieldList views, so that a field's choices are listed from
// the pairs its parser checks: choice_names_of<kCombiners> == {"sum", "mean", "sqrtn"}.
template <const auto& Choices>
inline constexpr auto choice_names_of = [] {
  std::array<const char*, Choices.size()> out{};
  for (std::size_t k = 0; k < out.size(); ++k) out[k] = Choices[k].first;
  return out;
}();

}  // namespace fedleaf::core
