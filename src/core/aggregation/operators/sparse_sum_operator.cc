#include "core/aggregation/operators/sparse_sum_operator.h"

#include <cmath>

#include "core/error.h"
#include "core/text/text_format.h"

namespace fedleaf::core {
namespace {

// The clip_norm rule, asked of every spec however it was made (a plan, a checkpoint, a caller).
double checked_clip_norm(SparseSumOperator op, std::optional<double> clip_norm,
                         const std::string& where) {
  if (!operator_rules(op).clips_to_norm) return 0.0;
  if (!clip_norm || !std::isfinite(*clip_norm) || *clip_norm <= 0.0) {
    throw InvalidInput(where + ": " + clip_norm_rule(op));
  }
  return *clip_norm;
}

}  // namespace

std::string clip_norm_rule(SparseSumOperator op) {
  return std::string(operator_name(op)) + " needs a finite clip_norm > 0";
}

OperatorSpec parse_operator_spec(std::string_view name, std::optional<double> clip_norm,
                                 const std::string& context) {
  const SparseSumOperator op = parse_operator_name(name, context);
  return {op, checked_clip_norm(op, clip_norm, context)};
}

OperatorSpec check_operator_spec(OperatorSpec spec, UpdateEncoding encoding,
                                 const std::string& where) {
  const OperatorRules& rules = operator_rules(spec.op);
  spec.clip_norm = checked_clip_norm(spec.op, spec.clip_norm, where);
  if (spec.clip.kind != ClipKind::kOff) {
    if (!rules.takes_robust_clip()) {
      throw InvalidInput(where + ": " + std::string(rules.name) + " takes no robust clip (" +
                         operator_names([](const OperatorRules& r) { return !r.tracks_values(); }) +
                         " has no values; " + operator_names([](const OperatorRules& r) {
                           return r.tracks_values() && r.clips_to_norm;
                         }) +
                         " clips by its clip_norm)");
    }
    if (!(std::isfinite(spec.clip.bound) && spec.clip.bound > 0.0)) {
      throw InvalidInput(where + ": the clip bound " + format_double_exact(spec.clip.bound) +
                         " must be finite and > 0");
    }
  } else {
    spec.clip.bound = 0.0;
  }
  if (spec.row_clip != 0.0 &&
      (encoding != UpdateEncoding::kRowSparse || spec.clip.kind != ClipKind::kRms ||
       !(std::isfinite(spec.row_clip) && spec.row_clip > 0.0))) {
    throw InvalidInput(where + ": a row clip (" + format_double_exact(spec.row_clip) +
                       ") needs a row_sparse tensor with an rms clip and a finite multiple > 0");
  }
  if (spec.min_contributors == 1) spec.min_contributors = 0;  // one report always suffices
  if (spec.min_contributors != 0 && !rules.takes_min_contributors) {
    throw InvalidInput(
        where + ": min_contributors applies to " +
        operator_names([](const OperatorRules& r) { return r.takes_min_contributors; }) +
        " only, not " + std::string(rules.name));
  }
  return spec;
}

}  // namespace fedleaf::core
