#include "server/repository/select_rows.h"

#include <string>
#include <vector>

#include "core/aggregation/updates/select_rules.h"
#include "core/wire/select_answer.h"
#include "core/wire/select_request.h"

namespace fedleaf::server {

SelectedRows select_rows(const SelectableModel& model, int round, std::string_view body,
                         std::string_view content_type) {
  const core::SelectRequest select =
      core::parse_select_request(body, core::select_body_format(content_type));
  core::check_select_request(select, *model.index, *model.plan);
  const std::string& bytes = *model.model.bytes;
  const std::vector<std::uint8_t> answer = core::write_select_answer(
      reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), *model.index, select,
      {{"model_etag", model.model.etag}, {"round", std::to_string(round)}},
      core::f16_download_tensors(*model.plan));
  SelectedRows out;
  out.bytes.assign(answer.begin(), answer.end());
  for (const auto& [name, ids] : select.rows) out.rows_per_tensor[name] = ids.size();
  return out;
}

}  // namespace fedleaf::server
