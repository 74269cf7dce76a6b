// The model:select use case: the rows of a round's model a leaf asks for, as a safetensors answer
// (core/wire/select_answer.h), built outside the repository's lock from the shared model bytes
// and their index; nothing is stored.
//
//   SelectedRows rows = select_rows(repo.selectable_model(p, token, r), r, body, content_type);
//   send(rows.bytes);
#pragma once

#include <string_view>

#include "server/repository/results.h"

namespace fedleaf::server {

// content_type: the body's media type (core::select_body_format). InvalidInput for a body type
// other than the two forms, a body that is not a request, or a request the plan's updates do not
// allow (core::check_select_request names the broken rule).
SelectedRows select_rows(const SelectableModel& model, int round, std::string_view body,
                         std::string_view content_type);

}  // namespace fedleaf::server
