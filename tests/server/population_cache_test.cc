// PopulationCache: populations loaded on first use, and quarantined when they cannot load.
#include "server/repository/population_cache.h"

#include <catch2/catch.hpp>

#include "server/repository/new_population.h"
#include "server/store/sqlite_store.h"
#include "server/util/server_errors.h"
#include "tests/core/error_matchers.h"
#include "tests/server/server_fixtures.h"

namespace fedleaf::server {
namespace {

// Stores a population as a server creates it, its round-0 model under `etag` (its own when
// empty).
void store_population(Store& store, const std::string& id, const std::string& etag = "") {
  const PopulationSpec spec = test::test_spec(id, 3, 1, 1);
  NewPopulation made =
      make_new_population(spec, parse_population_plan(spec), test::test_model_bytes(), 0);
  store.create_population(made.record, made.round0,
                          {id, 0, etag.empty() ? made.model_etag : etag, made.model_bytes});
}

}  // namespace

TEST_CASE("population_cache_loads_on_use_and_quarantines_a_population_that_cannot_load",
          "[population_cache]") {
  SqliteStore store(":memory:");
  FakeClock clock;
  ClaimWaiters waiters;
  store_population(store, "good");
  store_population(store, "bad", "not-its-etag");
  PopulationCache cache(store, clock, waiters, nullptr);

  cache.load_all();

  REQUIRE(cache.loaded("good"));
  CHECK(cache.loaded("good")->round.number == 0);
  CHECK(cache.loaded("bad") == nullptr);
  CHECK(cache.quarantine_holds("bad"));
  REQUIRE(cache.quarantine_reason("bad"));
  CHECK(cache.quarantine_reason("bad")->find("does not hash to its ETag") != std::string::npos);
  CHECK(cache.quarantine_reason("good") == nullptr);
  CHECK_THROWS_MATCHES(cache.state_of("bad"), Unavailable,
                       test::MessageContains("failed to load and is quarantined"));
  CHECK_THROWS_AS(cache.state_of("nobody"), NotFound);
  cache.erase("good");
  CHECK(cache.loaded("good") == nullptr);
  CHECK(cache.state_of("good").record.id == "good");  // loaded again on use
  CHECK(cache.loaded_ids() == std::vector<std::string>{"good"});
  cache.clear();
  CHECK(cache.loaded_ids().empty());
}

}  // namespace fedleaf::server
