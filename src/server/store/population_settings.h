// PopulationSettings: how a population's rounds run, as its creation body states them
// (PopulationSpec) and as the store keeps them (PopulationRecord) — one struct, so a setting
// added is added once.
//
//   PopulationRecord record;
//   record.settings = spec.settings;
#pragma once

#include <string>

namespace fedleaf::server {

struct PopulationSettings {
  int rounds = 1;             // training rounds; models 0..rounds are published (see drop_models)
  int clients_per_round = 1;  // reports that close a round at once
  int min_reports = 1;        // reports that close a round at its deadline
  double round_deadline_s = 600;
  double lease_s = 120;
  int train_tasks_per_round = 1;  // clients_per_round plus over-selection
  int eval_tasks_per_round = 0;
  // The server optimizer as compact JSON (core::server_optimizer_json), "" for FedAvg (the
  // default, and every population stored before the field existed).
  std::string server_optimizer_json;
  // "mode": "buffered" as compact JSON (core::buffered_spec_json: buffer_size, concurrency,
  // max_staleness, staleness_weight), "" for synchronous rounds (the default, and every
  // population stored before the field existed).
  std::string buffered_json;
  // The most tasks one client (its client key: the client token now, a device identity once
  // leaves have one) may hold at once in this population, of every kind and round: a claim past
  // it is 429. 0: no bound (the default, and every population stored before the field existed).
  int max_tasks_per_client = 0;
  // The "privacy" section as compact JSON (privacy_spec_json), "" for a population without
  // privacy (the default, and every population stored before the field existed). Its device
  // limits are read by repository/device_limits.h.
  std::string privacy_json;
};

}  // namespace fedleaf::server
