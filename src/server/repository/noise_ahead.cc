#include "server/repository/noise_ahead.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <utility>

namespace fedleaf::server {

void NoiseAhead::put(core::RoundNoise noise) {
  auto drawn = std::make_shared<const core::RoundNoise>(std::move(noise));
  std::lock_guard lock(mutex_);
  noise_ = std::move(drawn);
}

std::shared_ptr<const core::RoundNoise> NoiseAhead::take() {
  std::lock_guard lock(mutex_);
  return std::move(noise_);
}

std::function<void()> noise_draw_job(const std::shared_ptr<NoiseAhead>& ahead,
                                     core::RoundNoiseShape shape,
                                     const core::TreeNoiseSecret& secret, std::string population_id,
                                     std::shared_ptr<spdlog::logger> logger) {
  return [weak = std::weak_ptr<NoiseAhead>(ahead), shape = std::move(shape),
          secret = core::TreeNoiseSecret(secret), id = std::move(population_id),
          logger = std::move(logger)]() mutable {
    if (const std::shared_ptr<NoiseAhead> slot = weak.lock()) {
      try {
        slot->put(core::RoundNoise::draw(shape, secret, slot->tree_round()));
      } catch (const std::exception& e) {
        if (logger) {
          logger->error("event=noise_ahead_failed population={} round={} error=\"{}\"", id,
                        slot->tree_round() - 1, e.what());
        }
      }
    }
    volatile std::uint8_t* key = secret.data();
    for (std::size_t i = 0; i < secret.size(); ++i) key[i] = 0;
  };
}

}  // namespace fedleaf::server
