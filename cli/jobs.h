// Job commands: submit, jobs, show, cancel, touch, logs. Each is split into a request builder
// (arguments
// -> Request, usage errors exit 2), a renderer (server JSON -> text for people) and a Run* that
// sends and prints (`--json` prints the server's JSON as is).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/client.h"

namespace hg::cli {

struct SubmitArgs {
  std::optional<std::string> name;
  std::optional<std::string> budget;  // absent: unfunded
  int gpus = 1;
  std::optional<int> gpus_per_node;
  std::optional<std::string> min_runtime;  // durations as typed: "2h", "90s", "3600"
  std::optional<std::string> max_runtime;
  std::optional<std::string> lease;  // a session's lease (needs max_runtime; the server checks)
  std::optional<std::string> grace;
  bool resumable = false;
  std::optional<std::string> job_class;
  std::optional<int> priority;
  std::vector<std::string> env;  // K=V
  std::string cwd;
  std::vector<std::string> command;
  // Names this submission (the Idempotency-Key header): sent again, it finds the job the first
  // attempt made. RunSubmit draws a random one when it is empty.
  std::string idempotency_key;
};
CliResult<Request> BuildSubmit(const SubmitArgs& a);
std::string RenderSubmitted(const Json& reply);

struct JobsArgs {
  bool all = false;  // every state, finished jobs too
  std::optional<std::string> state;
  std::optional<std::string> user;
  std::optional<int> limit;
  std::optional<int64_t> before;  // only jobs with smaller ids: the next page of a history
};
CliResult<Request> BuildJobs(const JobsArgs& a);
std::string RenderJobs(const Json& reply);

// `show ID`: the job and its events.
Request BuildShow(int64_t id);
Request BuildEvents(int64_t id);
std::string RenderJob(const Json& job, const Json& events);

Request BuildCancel(int64_t id);
// `touch ID`: the session's user is active (POST /v1/jobs/{id}/activity).
Request BuildTouch(int64_t id);
std::string RenderTouched(const Json& job);

struct LogsArgs {
  int64_t id = 0;
  bool follow = false;
  bool stderr_stream = false;
  std::optional<int> attempt;
};
Request BuildLogs(const LogsArgs& a, int64_t offset);

CliResult<void> RunSubmit(Client& c, const SubmitArgs& a, bool json, std::ostream& out);
CliResult<void> RunJobs(Client& c, const JobsArgs& a, bool json, std::ostream& out);
CliResult<void> RunShow(Client& c, int64_t id, bool json, std::ostream& out);
CliResult<void> RunCancel(Client& c, int64_t id, bool json, std::ostream& out);
CliResult<void> RunTouch(Client& c, int64_t id, bool json, std::ostream& out);
// Writes the log bytes to `out` as they come. Without follow: everything there is now. With
// follow: polls from the last offset, calling `pause` between empty polls, until the server says
// the attempt is done and nothing is left.
CliResult<void> RunLogs(Client& c, const LogsArgs& a, std::ostream& out,
                        const std::function<void()>& pause);

}  // namespace hg::cli
