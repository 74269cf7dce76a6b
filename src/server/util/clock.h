// Time for leases and deadlines, injected so tests never sleep.
//
//   SystemClock wall;            double t = wall.now();     // unix seconds
//   FakeClock fake(1000.0);      fake.advance(30.0);        // fake.now() == 1030.0
//
// now() is unix time in seconds (fractional). Implementations are thread-safe.
#pragma once

#include <atomic>

namespace fedleaf::server {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double now() const = 0;
};

// The wall clock (std::chrono::system_clock).
class SystemClock : public Clock {
 public:
  double now() const override;
};

// A clock that moves only when told to.
class FakeClock : public Clock {
 public:
  explicit FakeClock(double start = 1'700'000'000.0) : now_(start) {}
  double now() const override { return now_.load(); }
  void set(double t) { now_.store(t); }
  void advance(double seconds) { now_.store(now_.load() + seconds); }

 private:
  std::atomic<double> now_;
};

}  // namespace fedleaf::server
