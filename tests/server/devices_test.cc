// TaskRepository's devices (devices.h, task_claims.h) on a private population: enrollment (a
// credential shown once, only its hash kept; 403 for a dead token, 409 without a privacy
// section, 429 past the hourly limit), and claims — none without a credential (401
// device_required), a forged or revoked one 403, train tasks within max_participations and
// min_separation (the rule's error, with the round to return at), evaluate tasks not counted.
// Every refusal changes no state: the round's task counts and the device's participations stay.
#include <catch2/catch.hpp>
#include <string>
#include <variant>

#include "server/util/server_errors.h"
#include "server/util/sha256.h"
#include "tests/core/error_matchers.h"
#include "tests/server/repository_harness.h"
#include "tests/server/store_backends.h"

namespace fedleaf::server {
namespace {

using test::MessageContains;
using test::test_spec;
using test::train_result;

// The contract's values (they pass the privacy section's full validation too).
constexpr const char* kPrivacy =
    R"({"mechanism":"dp_ftrl_tree","noise_multiplier":1.0,"clip_norm":1.0,"delta":1e-05,)"
    R"("max_epsilon":1000,"max_participations":2,"min_separation":1,)"
    R"("enrollments_per_token_per_hour":3})";

PopulationSpec private_spec(int eval_tasks = 0) {
  PopulationSpec spec = test_spec("p", 4, 1, 1);
  spec.settings.privacy_json = kPrivacy;
  spec.settings.eval_tasks_per_round = eval_tasks;
  return spec;
}

struct DeviceHarness : RepositoryHarness {
  CreatedPopulation p = repo.create_population(private_spec());

  ClaimOutcome claim(const std::string& credential) {
    return repo.claim(p.id, p.client_token, 0, credential);
  }
  TaskAssignment train(const std::string& credential) {
    ClaimOutcome outcome = claim(credential);
    REQUIRE(std::holds_alternative<TaskAssignment>(outcome));
    return std::get<TaskAssignment>(outcome);
  }
  DeviceRecord device(const std::string& credential) {
    return *store.find_device(p.id, sha256_hex(credential), false);
  }
  int train_tasks(int round) { return store.find_round(p.id, round)->train_tasks; }
  void report(const TaskAssignment& task) {
    REQUIRE(upload(task, train_result({1}, 0.5f, 0.1f, 4)).status == 201);
  }
};

}  // namespace

TEST_CASE("an_enrolled_device_claims_and_its_credential_is_kept_hashed", "[repository][devices]") {
  DeviceHarness h;
  const EnrolledDevice d = h.repo.enroll_device(h.p.id, h.p.client_token);

  CHECK(d.device_id.size() == 32);
  CHECK(d.credential.size() == 43);  // 32 bytes, base64url without padding
  const DeviceRecord stored = h.device(d.credential);
  CHECK(stored.id == d.device_id);
  CHECK(stored.credential_hash == sha256_hex(d.credential));
  CHECK(stored.enrolled_at == h.clock.now());
  CHECK(h.repo.enroll_device(h.p.id, h.p.client_token).credential != d.credential);

  const TaskAssignment task = h.train(d.credential);
  CHECK(task.kind == TaskKind::kTrain);
  CHECK(h.device(d.credential).participations == 1);
  CHECK(h.device(d.credential).last_round == 0);
  const DevicePage page = h.repo.devices(h.p.id, "");
  CHECK(page.devices.size() == 2);
  CHECK(page.next_after.empty());
}

TEST_CASE("a_private_claim_without_a_live_device_gets_no_task", "[repository][devices]") {
  DeviceHarness h;
  const EnrolledDevice d = h.repo.enroll_device(h.p.id, h.p.client_token);

  CHECK_THROWS_MATCHES(h.claim(""), DeviceRequired,
                       MessageContains("must carry the Fedleaf-Device header") &&
                           MessageContains("enroll first (POST /v1/populations/p/devices)"));
  CHECK_THROWS_MATCHES(h.claim("forged-credential"), Forbidden,
                       MessageContains("not a device of population 'p'"));
  h.repo.revoke_device(h.p.id, d.device_id);
  CHECK_THROWS_MATCHES(h.claim(d.credential), Forbidden, MessageContains("is revoked"));
  CHECK_THROWS_AS(h.repo.revoke_device(h.p.id, d.device_id), Conflict);
  CHECK_THROWS_AS(h.repo.revoke_device(h.p.id, "00ff"), NotFound);

  CHECK(h.train_tasks(0) == 0);
  CHECK(h.device(d.credential).participations == 0);
  CHECK(h.repo.devices(h.p.id, "").devices[0].revoked_at == h.clock.now());
}

TEST_CASE("a_device_takes_one_round_in_every_two_and_two_rounds_in_all", "[repository][devices]") {
  DeviceHarness h;
  const std::string a = h.repo.enroll_device(h.p.id, h.p.client_token).credential;
  const std::string b = h.repo.enroll_device(h.p.id, h.p.client_token).credential;

  h.report(h.train(a));  // round 0 closes: one client per round
  // One task per round, and min_separation 1: round 1 is too soon, with the round to return at.
  try {
    h.claim(a);
    FAIL("expected DeviceTooSoon");
  } catch (const DeviceTooSoon& e) {
    CHECK(e.retry_round() == 2);
    CHECK(std::string(e.what()).find("min_separation: this device took part in round 0") == 0);
    CHECK(e.retry_after_s() >= 1);
  }
  CHECK(h.train_tasks(1) == 0);
  CHECK(h.device(a).participations == 1);

  h.report(h.train(b));  // round 1
  h.report(h.train(a));  // round 2: allowed again
  CHECK(h.device(a).participations == 2);
  CHECK(h.device(a).last_round == 2);

  // Round 3 is past min_separation for b, but a has used its two rounds for good.
  CHECK_THROWS_MATCHES(h.claim(a), ParticipationsUsed,
                       MessageContains("max_participations: this device has taken part in 2 "
                                       "rounds, the most the population allows"));
  CHECK(h.train_tasks(3) == 0);
  CHECK(h.device(a).participations == 2);
  CHECK(std::holds_alternative<TaskAssignment>(h.claim(b)));
}

TEST_CASE("a_device_that_took_a_round_gets_no_second_task_of_it", "[repository][devices]") {
  RepositoryHarness wide;
  PopulationSpec spec = private_spec();
  spec.settings.clients_per_round = 3;
  spec.settings.min_reports = 3;
  spec.settings.train_tasks_per_round = 3;
  const CreatedPopulation p = wide.repo.create_population(spec);
  const std::string a = wide.repo.enroll_device(p.id, p.client_token).credential;
  REQUIRE(std::holds_alternative<TaskAssignment>(wide.repo.claim(p.id, p.client_token, 0, a)));

  CHECK_THROWS_MATCHES(wide.repo.claim(p.id, p.client_token, 0, a), DeviceTooSoon,
                       MessageContains("took a train task of round 0 already (one per round)"));
  CHECK(wide.store.find_round(p.id, 0)->train_tasks == 1);
  CHECK(wide.store.find_device(p.id, sha256_hex(a), false)->participations == 1);
}

// A leaf prefetches: while its task of round r trains it claims round r + 1. That claim waits for
// the round (a retry hint, the long poll), and is refused only when a train task of its round is
// there to refuse; after the last training round it hears that the population finished.
TEST_CASE("a_device_claiming_ahead_is_refused_only_when_its_round_opens", "[repository][devices]") {
  RepositoryHarness wide;
  PopulationSpec spec = private_spec();  // max_participations 2, min_separation 1
  spec.settings.rounds = 3;
  spec.settings.clients_per_round = 2;
  spec.settings.min_reports = 2;
  spec.settings.train_tasks_per_round = 2;
  const CreatedPopulation p = wide.repo.create_population(spec);
  const std::string a = wide.repo.enroll_device(p.id, p.client_token).credential;
  const auto task_a = std::get<TaskAssignment>(wide.repo.claim(p.id, p.client_token, 0, a));
  // Round 0 open, a holds its task: a claim for round 1 (min_separation 1 would refuse round 1)
  // is a retry, not a 429 — round 1 is not open yet.
  CHECK(std::holds_alternative<RetryLater>(wide.repo.claim(p.id, p.client_token, 1, a)));
  CHECK(std::holds_alternative<RetryLater>(wide.repo.claim(p.id, p.client_token, 3, a)));
  CHECK(wide.store.find_device(p.id, sha256_hex(a), false)->participations == 1);
  (void)task_a;
}

TEST_CASE("evaluate_tasks_go_to_live_devices_without_counting", "[repository][devices]") {
  RepositoryHarness h;
  const CreatedPopulation p = h.repo.create_population(private_spec(1));
  const std::string a = h.repo.enroll_device(p.id, p.client_token).credential;

  const ClaimOutcome first = h.repo.claim(p.id, p.client_token, 0, a);
  REQUIRE(std::holds_alternative<TaskAssignment>(first));
  CHECK(std::get<TaskAssignment>(first).kind == TaskKind::kEvaluate);
  CHECK(h.store.find_device(p.id, sha256_hex(a), false)->participations == 0);
  const ClaimOutcome second = h.repo.claim(p.id, p.client_token, 0, a);
  REQUIRE(std::holds_alternative<TaskAssignment>(second));
  CHECK(std::get<TaskAssignment>(second).kind == TaskKind::kTrain);
  CHECK(h.store.find_device(p.id, sha256_hex(a), false)->participations == 1);
  CHECK_THROWS_AS(h.repo.claim(p.id, p.client_token, 0, ""), DeviceRequired);
}

TEST_CASE("an_enrollment_flood_is_refused_past_the_hourly_limit", "[repository][devices]") {
  DeviceHarness h;
  for (int i = 0; i < 3; ++i) h.repo.enroll_device(h.p.id, h.p.client_token);

  CHECK_THROWS_MATCHES(h.repo.enroll_device(h.p.id, h.p.client_token), TooManyRequests,
                       MessageContains("enrollments_per_token_per_hour: this client token "
                                       "enrolled 3 devices of population 'p' in the last hour"));
  CHECK(h.repo.devices(h.p.id, "").devices.size() == 3);
  // Another token of the population has its own count.
  const IssuedToken other = h.repo.issue_client_token(h.p.id);
  CHECK_NOTHROW(h.repo.enroll_device(h.p.id, other.client_token));
  h.clock.advance(3601);
  CHECK_NOTHROW(h.repo.enroll_device(h.p.id, h.p.client_token));
}

TEST_CASE("enrollment_needs_a_live_token_of_a_private_population", "[repository][devices]") {
  RepositoryHarness h;
  const CreatedPopulation open = h.repo.create_population(test_spec("open", 2, 1, 1));
  CHECK_THROWS_MATCHES(h.repo.enroll_device(open.id, open.client_token), Conflict,
                       MessageContains("has no privacy section"));
  const CreatedPopulation p = h.repo.create_population(private_spec());
  CHECK_THROWS_AS(h.repo.enroll_device(p.id, open.client_token), Forbidden);
  CHECK_THROWS_AS(h.repo.enroll_device("nope", p.client_token), NotFound);
  CHECK(h.repo.devices(p.id, "").devices.empty());
  // A public population's claims need no device.
  CHECK(std::holds_alternative<TaskAssignment>(h.repo.claim(open.id, open.client_token)));
}

// Servers sharing a store: a server that has loaded the population leases a private train task
// from its loaded round (one locked read of the device), and still holds the device to one task
// per round, refuses an unknown credential and one-less claims as the full claim does.
TEST_CASE("servers_sharing_a_store_hold_a_device_to_its_limits", "[repository][devices][shared]") {
  PostgresBackend backend;
  std::unique_ptr<Store> store0 = backend.open();
  if (!store0) return;
  std::unique_ptr<Store> store1 = backend.open();
  FakeClock clock;
  ServerMetrics metrics0;
  ServerMetrics metrics1;
  TaskRepository s0(*store0, clock, metrics0, TaskRepositoryOptions{});
  TaskRepository s1(*store1, clock, metrics1, TaskRepositoryOptions{});
  const auto commit = [](TaskRepository& repo, Store& store) {
    repo.commit_batch();
    store.sync();
  };
  PopulationSpec spec = private_spec();
  spec.settings.clients_per_round = spec.settings.min_reports = 3;
  spec.settings.train_tasks_per_round = 3;
  const CreatedPopulation p = s0.create_population(spec);
  const std::string a = s0.enroll_device(p.id, p.client_token).credential;
  const std::string b = s0.enroll_device(p.id, p.client_token).credential;
  commit(s0, *store0);
  // b's claim loads the population on s1; a's own task comes from s0.
  REQUIRE(std::holds_alternative<TaskAssignment>(s1.claim(p.id, p.client_token, 0, b)));
  commit(s1, *store1);
  REQUIRE(std::holds_alternative<TaskAssignment>(s0.claim(p.id, p.client_token, 0, a)));
  commit(s0, *store0);

  CHECK_THROWS_MATCHES(s1.claim(p.id, p.client_token, 0, a), DeviceTooSoon,
                       MessageContains("took a train task of round 0 already (one per round)"));
  CHECK_THROWS_MATCHES(s1.claim(p.id, p.client_token, 0, "forged-credential"), Forbidden,
                       MessageContains("not a device of population 'p'"));
  CHECK_THROWS_AS(s1.claim(p.id, p.client_token, 0, ""), DeviceRequired);
  commit(s1, *store1);
  CHECK(store0->find_device(p.id, sha256_hex(a), false)->participations == 1);
  CHECK(store0->find_device(p.id, sha256_hex(b), false)->participations == 1);
  // A third device takes the round's last task through s1's loaded round.
  const std::string c = s1.enroll_device(p.id, p.client_token).credential;
  REQUIRE(std::holds_alternative<TaskAssignment>(s1.claim(p.id, p.client_token, 0, c)));
  commit(s1, *store1);
  CHECK(store0->find_device(p.id, sha256_hex(c), false)->participations == 1);
}

}  // namespace fedleaf::server
