#include "core/model.h"

namespace hg {

const char* ToString(NodeState s) {
  switch (s) {
    case NodeState::kReady:
      return "ready";
    case NodeState::kDraining:
      return "draining";
    case NodeState::kDrained:
      return "drained";
    case NodeState::kLost:
      return "lost";
  }
  return "?";
}

const char* ToString(JobState s) {
  switch (s) {
    case JobState::kPending:
      return "pending";
    case JobState::kRunning:
      return "running";
    case JobState::kSucceeded:
      return "succeeded";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
    case JobState::kPreempted:
      return "preempted";
  }
  return "?";
}

int32_t UniformSliceGpus(const RunningJob& r) {
  if (r.placement.empty()) return 0;
  const int32_t first = r.placement.front().gpus.value();
  for (const Slice& sl : r.placement)
    if (sl.gpus.value() != first) return 0;
  return first;
}

int32_t GpusOn(const RunningJob& r, NodeId id, int32_t uniform) {
  if (uniform > 0) return uniform;
  int32_t here = 0;
  for (const Slice& sl : r.placement)
    if (sl.node == id) here += sl.gpus.value();
  return here;
}

}  // namespace hg
