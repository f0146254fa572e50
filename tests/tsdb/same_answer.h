// Comparing an answer the engine computed with Prometheus' own answer to the same question, value
// for value and bit for bit (NaN, -0), on the shared 24-host job's private server.
#pragma once

#include <cmath>
#include <map>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/tsdb/job_scoped_client.h"
#include "engine/tsdb/private_prometheus.h"
#include "engine/tsdb/promql_escape.h"
#include "tests/tsdb/tsdb_fixture.h"

namespace diagnose::testing {

inline bool SameValue(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// The answer as a set: Prometheus orders an instant vector as its evaluation happened to.
inline std::map<Labels, std::vector<Sample>> BySeries(const QueryResult& r) {
  std::map<Labels, std::vector<Sample>> out;
  for (const auto& s : r.series) out[s.labels] = s.samples;
  return out;
}

inline void ExpectSameAnswer(const QueryResult& derived, const QueryResult& asked) {
  EXPECT_EQ(derived.result_type, asked.result_type);
  const auto d = BySeries(derived), a = BySeries(asked);
  ASSERT_EQ(d.size(), a.size());
  for (auto di = d.begin(), ai = a.begin(); di != d.end(); ++di, ++ai) {
    ASSERT_EQ(di->first, ai->first);
    ASSERT_EQ(di->second.size(), ai->second.size()) << "series " << nlohmann::json(di->first).dump();
    for (size_t i = 0; i < di->second.size(); ++i) {
      EXPECT_EQ(di->second[i].t, ai->second[i].t);
      EXPECT_TRUE(SameValue(di->second[i].v, ai->second[i].v))
          << nlohmann::json(di->first).dump() << " at " << di->second[i].t << ": derived " << di->second[i].v
          << ", Prometheus " << ai->second[i].v;
    }
  }
}

// A private Prometheus on the shared job; end_ is its last whole second.
class SharedJobPrometheusTest : public ::testing::Test {
 protected:
  // The server narrowed as --job-label narrows a fleet store (every selector sent gets one more
  // matcher, engine/tsdb/job_scoped_client.h), here to every series but the first host's, Ray's
  // (no host label) kept: an answer the engine composes from scoped parts must be the one
  // Prometheus gives to the scoped whole.
  std::unique_ptr<JobScopedClient> AllButTheFirstHost() {
    auto hosts = server_->client().Run(Query::Instant("count by (host) (hw_gpu_power_watts)", end_));
    EXPECT_TRUE(hosts.ok() && !hosts->series.empty()) << (hosts.ok() ? "no host" : hosts.status().ToString());
    std::string first;
    if (hosts.ok())
      for (const auto& series : hosts->series)
        if (first.empty() || series.labels.at("host") < first) first = series.labels.at("host");
    return std::make_unique<JobScopedClient>(server_->client(), "host!=\"" + EscapePromqlString(first) + "\"");
  }

  void SetUp() override {
    PrivatePrometheusOptions options;
    options.temp_root = temp_root_.path;
    auto server = PrivatePrometheus::Start(SharedJobFixture().tsdb_dir, options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    end_ = (server_->inventory().max_time_ms() - 1) / 1000.0;
  }
  ScopedTempDir temp_root_{"same-answer-root-"};
  std::unique_ptr<PrivatePrometheus> server_;
  double end_ = 0;
};

}  // namespace diagnose::testing
