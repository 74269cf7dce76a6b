// Whether a parsed model:select request may be answered from a model under a plan.
//
//   const UpdatePlan plan = parse_update_plan(plan_json);
//   check_select_request(request, model_index, plan);   // InvalidInput naming the rule
//   write_select_answer(..., f16_download_tensors(plan));  // the plan's "download_values"
//
// Rules, in the order they are checked for each requested tensor (the first broken one is
// reported, naming the tensor):
// 1. the model holds the tensor ("unknown tensor");
// 2. the plan's updates name it with encoding row_sparse (dense and coo tensors are sent whole);
// 3. the plan does not ask for it whole (download "full");
// 4. the model stores it as a dense array of rank >= 1, and holds no array named like a
//    component of its answer (T:indices, T:values, T:dense_shape);
// 5. at most max_select_rows ids when the plan sets that cap;
// 6. every id < the tensor's row count (shape[0]).
// Ids are already sorted and unique (parse_select_request), so rule 6 also bounds the count by
// the row count.
#pragma once

#include <set>
#include <string>

#include "core/aggregation/updates/update_plan.h"
#include "core/wire/safetensors_index.h"
#include "core/wire/select_request.h"

namespace fedleaf::core {

void check_select_request(const SelectRequest& request, const SafetensorsIndex& model,
                          const UpdatePlan& plan);

// The tensors whose "download_values" is "f16": a model:select answer sends them as F16.
std::set<std::string> f16_download_tensors(const UpdatePlan& plan);

}  // namespace fedleaf::core
