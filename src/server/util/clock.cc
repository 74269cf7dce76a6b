#include "server/util/clock.h"

#include <chrono>

namespace fedleaf::server {

double SystemClock::now() const {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

}  // namespace fedleaf::server
