// NoiseAhead: a private round's release noise, drawn while the round is still open.
//
//   auto ahead = std::make_shared<NoiseAhead>(/*tree_round=*/st.round.number + 1);
//   st.noise_ahead = ahead;                            // under the repository's mutex
//   closer.post([...] { ahead->put(core::RoundNoise::draw(shape, secret, 6)); });
//   ...                                                // the round fills; its close, later:
//   std::shared_ptr<const core::RoundNoise> noise = ahead->take();   // null: draw inline
//
// Why: the noise of a round depends only on the population's secret and the round
// (core/privacy/round_noise.h), and drawing it is most of a private close. A close keeps the round
// closed to train claims until the next round opens, so the round lifecycle has the closer thread
// draw the next round's noise right after a close (or a load), while the new round fills; the
// close then only adds it. Jobs on the closer run in order, so a close posted after the draw finds
// the noise there. Nothing here is persisted: after a restart the noise is drawn again, the same
// (it is derived from the secret), so this changes no release.
//
// put() and take() are thread-safe. The noise is as secret as the population's secret: never
// logged or served; take() hands it to the release and leaves nothing behind.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/privacy/round_noise.h"

namespace spdlog {
class logger;
}

namespace fedleaf::server {

class NoiseAhead {
 public:
  explicit NoiseAhead(std::uint64_t tree_round) : tree_round_(tree_round) {}

  // The tree round (1-based) this noise is for: a training round's number + 1.
  std::uint64_t tree_round() const { return tree_round_; }
  void put(core::RoundNoise noise);
  // The noise if it was drawn and not yet taken, else null.
  std::shared_ptr<const core::RoundNoise> take();

 private:
  const std::uint64_t tree_round_;
  std::mutex mutex_;
  std::shared_ptr<const core::RoundNoise> noise_;  // guarded by mutex_
};

// The closer's job that draws `ahead`'s noise from `shape` and `secret`. It does nothing once
// `ahead` is gone (the round closed without it, or its state was reloaded), logs a failure
// (event=noise_ahead_failed, never the secret) instead of throwing, and wipes its copy of the
// secret when done.
std::function<void()> noise_draw_job(const std::shared_ptr<NoiseAhead>& ahead,
                                     core::RoundNoiseShape shape,
                                     const core::TreeNoiseSecret& secret, std::string population_id,
                                     std::shared_ptr<spdlog::logger> logger);

}  // namespace fedleaf::server
