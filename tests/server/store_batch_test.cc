// StoreBatch: steps are all-or-nothing inside one batch transaction; commit ends the batch; a
// failed step surfaces as Unavailable (Conflict passes through) and undoes only itself.
#include "server/repository/store_batch.h"

#include <catch2/catch.hpp>
#include <stdexcept>

#include "server/store/sqlite_store.h"
#include "tests/server/server_fixtures.h"

namespace fedleaf::server {
namespace {

void create(Store& store, const std::string& id) {
  RoundRecord round0;
  round0.population_id = id;
  store.create_population(test::test_population_record(id), round0, {id, 0, "etag", "model"});
}

}  // namespace

TEST_CASE("store_batch_steps_share_one_transaction_until_commit", "[store_batch]") {
  SqliteStore store(":memory:");
  int abandoned = 0;
  StoreBatch batch(store, [&] { ++abandoned; });
  CHECK_FALSE(batch.is_open());

  batch.step("first", [&] { create(store, "a"); });
  batch.step("second", [&] { create(store, "b"); });
  CHECK(batch.is_open());
  batch.commit(true);
  CHECK_FALSE(batch.is_open());
  CHECK(store.list_populations().size() == 2);
  CHECK(abandoned == 0);
}

TEST_CASE("store_batch_failed_step_is_undone_alone_and_surfaces_as_unavailable", "[store_batch]") {
  SqliteStore store(":memory:");
  StoreBatch batch(store, {});
  batch.step("kept", [&] { create(store, "a"); });

  CHECK_THROWS_MATCHES(batch.step("broken step",
                                  [&] {
                                    create(store, "b");
                                    throw std::runtime_error("disk on fire");
                                  }),
                       Unavailable,
                       Catch::Matchers::Message("broken step: store failure: disk on fire"));
  CHECK_THROWS_AS(batch.step("conflict", [] { throw Conflict("taken"); }), Conflict);
  batch.commit(false);
  const auto stored = store.list_populations();
  REQUIRE(stored.size() == 1);
  CHECK(stored[0].id == "a");
}

TEST_CASE("store_batch_full_durability_commits_the_batch_with_the_step", "[store_batch]") {
  SqliteStore store(":memory:");
  StoreBatch batch(store, {});
  batch.step("a", [&] { create(store, "a"); });
  batch.step(
      "b", [&] { create(store, "b"); }, Durability::kFull);
  CHECK_FALSE(batch.is_open());
  CHECK(store.list_populations().size() == 2);
}

}  // namespace fedleaf::server
