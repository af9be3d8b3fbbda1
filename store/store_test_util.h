// Helpers the store tests share: a job with every field set, a field-by-field comparison, and a
// bounded wait.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "store/store.h"

namespace hg::store {

inline JobRecord FullJob() {
  JobRecord j;
  j.name = "train-llm";
  j.user = "alice";
  j.budget = "research/nlp";
  j.gpus = 16;
  j.gpus_per_node = 8;
  j.job_class = "long";
  j.min_runtime_s = 3600;
  j.max_runtime_s = 86400;
  j.lease_s = 1800;
  j.resumable = true;
  j.grace_s = 300;
  j.priority = -3;
  j.command = {"python", "train.py", "--lr", "3e-4", "quote\"and\\slash", "ünïcode"};
  j.env = {{"A", "1"}, {"PATH", "/usr/bin"}, {"EMPTY", ""}};
  j.cwd = "/home/alice/llm";
  j.state = "running";
  j.reason = "started on n1,n2";
  j.reason_code = "started";
  j.submitted_at = 1000;
  j.queued_since = 1001;
  j.started_at = 1002;
  j.ended_at = 1003;
  j.attempts = 2;
  j.exit_code = 0;
  j.exit_signal = 15;
  j.placement_json = R"([{"node":"n1","gpus":[0,1]}])";
  j.active_at = 1500;
  j.stop_for = 77;
  j.stop_holds = true;
  return j;  // no submit_key: tests insert this job many times, and a key is unique per user
}

inline void ExpectSameJob(const JobRecord& a, const JobRecord& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.user, b.user);
  EXPECT_EQ(a.budget, b.budget);
  EXPECT_EQ(a.gpus, b.gpus);
  EXPECT_EQ(a.gpus_per_node, b.gpus_per_node);
  EXPECT_EQ(a.job_class, b.job_class);
  EXPECT_EQ(a.min_runtime_s, b.min_runtime_s);
  EXPECT_EQ(a.max_runtime_s, b.max_runtime_s);
  EXPECT_EQ(a.lease_s, b.lease_s);
  EXPECT_EQ(a.resumable, b.resumable);
  EXPECT_EQ(a.grace_s, b.grace_s);
  EXPECT_EQ(a.priority, b.priority);
  EXPECT_EQ(a.command, b.command);
  EXPECT_EQ(a.env, b.env);
  EXPECT_EQ(a.cwd, b.cwd);
  EXPECT_EQ(a.state, b.state);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.reason_code, b.reason_code);
  EXPECT_EQ(a.submitted_at, b.submitted_at);
  EXPECT_EQ(a.queued_since, b.queued_since);
  EXPECT_EQ(a.started_at, b.started_at);
  EXPECT_EQ(a.ended_at, b.ended_at);
  EXPECT_EQ(a.attempts, b.attempts);
  EXPECT_EQ(a.exit_code, b.exit_code);
  EXPECT_EQ(a.exit_signal, b.exit_signal);
  EXPECT_EQ(a.placement_json, b.placement_json);
  EXPECT_EQ(a.active_at, b.active_at);
  EXPECT_EQ(a.stop_for, b.stop_for);
  EXPECT_EQ(a.stop_holds, b.stop_holds);
  EXPECT_EQ(a.submit_key, b.submit_key);
}

// Polls cond until it holds or a deadline passes.
template <class F>
inline bool WaitFor(F cond) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::yield();
  }
  return false;
}

}  // namespace hg::store
