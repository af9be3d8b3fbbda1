#include "server/metrics.h"

#include <gtest/gtest.h>

namespace hg::server {
namespace {

TEST(Metrics, QuantileIsTheNearestRank) {
  std::vector<double> v;
  EXPECT_EQ(Quantile(v, 0.5), 0.0);
  for (int i = 100; i >= 1; --i) v.push_back(i);
  EXPECT_EQ(Quantile(v, 0.5), 50.0);
  EXPECT_EQ(Quantile(v, 0.99), 99.0);
  EXPECT_EQ(Quantile(v, 1.0), 100.0);
}

TEST(Metrics, RendersEveryFamilyAndEscapesLabels) {
  MetricsInput in;
  in.queue_funded = 3;
  in.pending_by_reason = {{"wait_gpus", 2}, {"wait_shape", 1}};
  in.running_unfunded_gpus = 8;
  in.capacity_gpus = 16;
  in.cycle_seconds = {0.002, 0.001, 0.004};
  in.cycle_seconds_sum = 0.007;
  in.cycle_count = 3;
  in.cycles_by_trigger = {{"change", 2}, {"wake", 1}};
  in.preemptions = {{"preempt_for_funded", 2}};
  in.owed_gpu_hours = {{"ai/\"x\"", 1.5}};
  in.delivered_gpu_hours = {{"ai", 0.25}};
  in.nodes = {{"lost", 0}, {"ready", 2}};
  in.submissions = 7;
  in.activity_reports = 4;
  in.activity_cpu = 5;
  const std::string t = RenderMetrics(in);
  for (const char* line : {"hourglass_queue_jobs{funded=\"true\"} 3\n",
                           "hourglass_queue_jobs{funded=\"false\"} 0\n",
                           "hourglass_pending_jobs{reason=\"wait_gpus\"} 2\n",
                           "hourglass_pending_jobs{reason=\"wait_shape\"} 1\n",
                           "hourglass_running_gpus{funded=\"false\"} 8\n",
                           "hourglass_capacity_gpus 16\n",
                           "hourglass_cycle_seconds{quantile=\"0.5\"} 0.002\n",
                           "hourglass_cycle_seconds{quantile=\"0.99\"} 0.004\n",
                           "hourglass_cycle_seconds_count 3\n",
                           "hourglass_preemptions_total{reason=\"preempt_for_funded\"} 2\n",
                           "hourglass_budget_owed_gpu_hours{budget=\"ai/\\\"x\\\"\"} 1.5\n",
                           "hourglass_budget_delivered_gpu_hours{budget=\"ai\"} 0.25\n",
                           "hourglass_nodes{state=\"ready\"} 2\n",
                           "hourglass_submissions_total 7\n",
                           "hourglass_activity_reports_total{source=\"api\"} 4\n",
                           "hourglass_activity_reports_total{source=\"cpu\"} 5\n",
                           "hourglass_cycles_total{trigger=\"change\"} 2\n",
                           "hourglass_cycles_total{trigger=\"wake\"} 1\n",
                           "hourglass_cycles_total{trigger=\"timer\"} 0\n",
                           "# TYPE hourglass_cycle_seconds summary\n"})
    EXPECT_NE(t.find(line), std::string::npos) << line << "\n" << t;
}

// Queue waits as a Prometheus histogram: cumulative buckets ending in +Inf, a sum and a count
// per class; a wait on a bucket's bound counts in that bucket (le).
TEST(Metrics, QueueWaitsAreAHistogramPerClass) {
  MetricsInput in;
  for (double w : {0.0, 10.0, 11.0, 4000.0, 200000.0}) ObserveQueueWait(in.queue_wait, "debug", w);
  ObserveQueueWait(in.queue_wait, "batch \"x\"", 30);
  const std::string t = RenderMetrics(in);
  for (const char* line :
       {"# TYPE hourglass_queue_wait_seconds histogram\n",
        "hourglass_queue_wait_seconds_bucket{class=\"debug\",le=\"10\"} 2\n",
        "hourglass_queue_wait_seconds_bucket{class=\"debug\",le=\"30\"} 3\n",
        "hourglass_queue_wait_seconds_bucket{class=\"debug\",le=\"3600\"} 3\n",
        "hourglass_queue_wait_seconds_bucket{class=\"debug\",le=\"14400\"} 4\n",
        "hourglass_queue_wait_seconds_bucket{class=\"debug\",le=\"86400\"} 4\n",
        "hourglass_queue_wait_seconds_bucket{class=\"debug\",le=\"+Inf\"} 5\n",
        "hourglass_queue_wait_seconds_sum{class=\"debug\"} 204021\n",
        "hourglass_queue_wait_seconds_count{class=\"debug\"} 5\n",
        "hourglass_queue_wait_seconds_bucket{class=\"batch \\\"x\\\"\",le=\"30\"} 1\n"})
    EXPECT_NE(t.find(line), std::string::npos) << line << "\n" << t;
}

// Past kMaxWaitClasses classes, new ones count as "other"; known ones keep their own.
TEST(Metrics, QueueWaitClassesAreBounded) {
  std::map<std::string, WaitHistogram> by_class;
  for (size_t i = 0; i < kMaxWaitClasses; ++i)
    ObserveQueueWait(by_class, "c" + std::to_string(i), 1);
  ObserveQueueWait(by_class, "typo1", 5);
  ObserveQueueWait(by_class, "typo2", 5);
  ObserveQueueWait(by_class, "c0", 5);
  EXPECT_EQ(by_class.size(), kMaxWaitClasses + 1);
  EXPECT_EQ(by_class.at("other").count, 2);
  EXPECT_EQ(by_class.at("c0").count, 2);
  EXPECT_EQ(by_class.count("typo1"), 0u);
}

}  // namespace
}  // namespace hg::server
