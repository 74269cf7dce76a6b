// The Store suite (store_suite.h), every backend: a population's client tokens — the first (id 0)
// stored with the population, more issued (1, 2, ...), revoked once; a claim under a token
// (ClaimRequest::client_token_hash) leases nothing unless the token is live, on every connection;
// each issue and revocation moves the population's tokens_epoch (what a server sharing the store
// re-reads them on).
#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "server/store/store.h"
#include "tests/server/server_fixtures.h"
#include "tests/server/store_backends.h"
#include "tests/server/store_suite.h"

namespace fedleaf::server {
namespace {

using store_suite::create;
using store_suite::population;

int issue(Store& store, const std::string& hash, double now) {
  StoreTransaction tx(store, Durability::kFull);
  const int id = store.issue_client_token("p", hash, now);
  tx.commit();
  return id;
}

bool revoke(Store& store, int id, double now) {
  StoreTransaction tx(store, Durability::kFull);
  const bool revoked = store.revoke_client_token("p", id, now);
  tx.commit();
  return revoked;
}

std::optional<ClaimedTask> claim_under(Store& store, const std::string& client_token_hash,
                                       double now) {
  StoreTransaction tx(store, Durability::kNormal);
  ClaimRequest request{"p", 0, TaskKind::kTrain, 5, now, now + 5, "lease-" + client_token_hash};
  request.client_token_hash = client_token_hash;
  std::optional<ClaimedTask> claimed = store.claim_task(request);
  tx.commit();
  return claimed;
}

}  // namespace

FEDLEAF_STORE_CASE(store_client_tokens_are_issued_listed_and_revoked_once, FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  const std::string first = population("p").client_token_hash;
  const std::int64_t epoch0 = store.find_population("p")->tokens_epoch;

  CHECK(issue(store, "hash-1", 200) == 1);
  CHECK(issue(store, "hash-2", 201) == 2);

  auto tokens = store.list_client_tokens("p");
  REQUIRE(tokens.size() == 3);
  CHECK(tokens[0].id == 0);
  CHECK(tokens[0].token_hash == first);
  CHECK(tokens[0].created_at == 100);
  CHECK(tokens[1].token_hash == "hash-1");
  CHECK(tokens[2].created_at == 201);
  CHECK(tokens[2].revoked_at == 0);
  CHECK(store.find_population("p")->tokens_epoch == epoch0 + 2);
  CHECK(store.find_progress("p", 0)->tokens_epoch == epoch0 + 2);

  CHECK(revoke(store, 0, 300));
  CHECK_FALSE(revoke(store, 0, 301));  // once
  CHECK(store.list_client_tokens("p")[0].revoked_at == 300);
  CHECK(store.find_population("p")->tokens_epoch == epoch0 + 3);
  StoreTransaction tx(store, Durability::kFull);
  CHECK_THROWS_AS(store.revoke_client_token("p", 7, 302), NotFound);
  CHECK_THROWS_AS(store.revoke_client_token("nope", 0, 302), NotFound);
  CHECK_THROWS_AS(store.issue_client_token("nope", "h", 302), NotFound);
}

FEDLEAF_STORE_CASE(store_a_claim_under_a_revoked_token_leases_nothing, FEDLEAF_STORE_BACKENDS) {
  create(store, "p");
  const std::string first = population("p").client_token_hash;
  issue(store, "hash-1", 200);

  CHECK(claim_under(store, first, 100));
  CHECK(claim_under(store, "hash-1", 100));
  CHECK_FALSE(claim_under(store, "no-such-token", 100));
  auto other = TestType::kShared ? backend.open() : nullptr;
  revoke(other ? *other : store, 0, 300);

  CHECK_FALSE(claim_under(store, first, 101));
  CHECK(claim_under(store, "hash-1", 101));
}

}  // namespace fedleaf::server
