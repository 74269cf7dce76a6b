// CommitGate: what a transport needs of the group commit: hold an answer until the work done
// before it is committed (a claim's lease survives a killed process) or durable (an upload's
// result survives power loss). GroupCommit (repository/group_commit.h, which runs the commits)
// implements it; the HTTP adapter is handed it as this, so it includes nothing of the repository.
//
//   gate.after_durable([=](bool durable) { post(executor, [=] { send(durable ? ok : e503); }); });
#pragma once

#include <functional>

namespace fedleaf::server {

class CommitGate {
 public:
  using Release = std::function<void(bool ok)>;

  virtual ~CommitGate() = default;
  // Calls release(true) once every operation done before this call is committed; release(false)
  // when that cannot be promised. `release` runs on another thread and must be quick.
  virtual void after_commit(Release release) = 0;
  // As after_commit, once those operations are committed and synced (durable).
  virtual void after_durable(Release release) = 0;
};

}  // namespace fedleaf::server
