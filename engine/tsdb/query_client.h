// The one way the engine asks PromQL questions, whatever holds the data (a private Prometheus on a
// job's snapshot, a live Prometheus, Thanos/Mimir/VictoriaMetrics). Playbook evaluation takes a
// QueryClient&, so unit tests inject a fake and integration tests a real server.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/core/json.h"
#include "engine/core/status.h"

namespace diagnose {

using Labels = std::map<std::string, std::string>;

struct Sample {
  double t = 0;   // seconds since the Unix epoch
  double v = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Sample, t, v)

struct Series {
  Labels labels;                  // includes __name__ when the server returns it
  std::vector<Sample> samples;    // one sample for instant vectors
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Series, labels, samples)

struct Query {
  enum class Kind { kInstant, kRange };
  Kind kind = Kind::kInstant;
  std::string promql;
  double time = 0;                // instant: evaluation time (never "now" for recorded data)
  double start = 0, end = 0, step = 0;   // range
  std::string id;                 // caller's handle for timing/evidence, e.g. a rule id
  // The plan's estimate of the samples the server holds at once to answer it (series x steps,
  // engine/dag/range_split.h), 0 when not estimated: HttpQueryClient bounds their sum in flight.
  int64_t estimated_samples = 0;

  static Query Instant(std::string promql, double time, std::string id = "");
  static Query Range(std::string promql, double start, double end, double step, std::string id = "");
};

// One /api/v1/label/<label>/values question restricted to [start, end]; matchers may be empty.
struct LabelValuesQuestion {
  std::string label;
  std::vector<std::string> matchers;
  double start = 0, end = 0;
};

// One /api/v1/series question: the series matching any of `matchers` with samples in [start, end].
struct SeriesQuestion {
  std::vector<std::string> matchers;
  double start = 0, end = 0;
};

struct QueryResult {
  std::string result_type;        // vector | matrix | scalar | string
  std::vector<Series> series;     // scalar results become one series without labels
  std::vector<std::string> warnings;   // server warnings (Thanos partial responses, ...)
  double effective_step = 0;      // range: the step actually used after clamping
  double elapsed_seconds = 0;     // wall time of the request(s)
  int attempts = 1;
};

// An endpoint may send thousands of warnings with one answer (5,000 made a 234 MB report: every
// warning went into every evidence text, and merging answers compared each with all the others).
// An answer keeps its first kMaxWarningsPerAnswer distinct warnings, each at most
// kMaxWarningBytes, and one last line saying how many distinct ones were left out.
inline constexpr size_t kMaxWarningsPerAnswer = 10;
inline constexpr size_t kMaxWarningBytes = 500;
// De-duplicates (in linear time), shortens and caps `warnings` as above. A "left out" line from an
// earlier cap (of an answer merged into this one) adds its count to the new one.
void CapWarnings(std::vector<std::string>* warnings);
// `into` followed by the warnings of `from` it lacks, capped as above: the warnings of an answer
// computed from several others.
void MergeWarnings(const std::vector<std::string>& from, std::vector<std::string>* into);

class QueryClient {
 public:
  virtual ~QueryClient() = default;

  virtual StatusOr<QueryResult> Run(const Query& query) = 0;
  // Runs independent queries concurrently where the implementation can; results keep input order.
  // The default is sequential.
  virtual std::vector<StatusOr<QueryResult>> RunBatch(const std::vector<Query>& queries);
  // /api/v1/label/<name>/values restricted to [start, end]; matchers may be empty.
  virtual StatusOr<std::vector<std::string>> LabelValues(const std::string& label,
                                                         const std::vector<std::string>& matchers,
                                                         double start, double end) = 0;
  // Independent label-value questions, concurrently where the implementation can; results keep input
  // order. The default asks them one at a time.
  virtual std::vector<StatusOr<std::vector<std::string>>> LabelValuesBatch(
      const std::vector<LabelValuesQuestion>& questions);
  // /api/v1/series
  virtual StatusOr<std::vector<Labels>> SeriesMatching(const std::vector<std::string>& matchers,
                                                       double start, double end) = 0;
  // How many series each question matches, asked only to size other questions (engine/dag/range_split.h):
  // a failure costs an optimisation, not an answer, so a client that records failed requests does not
  // record it. Concurrently where the implementation can (a wave's look-ups one after the other held
  // back all of its questions); results keep input order. The default asks SeriesMatching in turn.
  virtual std::vector<StatusOr<int64_t>> SeriesCountsForEstimate(const std::vector<SeriesQuestion>& questions);
  // "private Prometheus on a copy of <dir> (127.0.0.1:PORT)", "https://mimir/prometheus", ...
  virtual std::string Describe() const = 0;
  // True when every answer is a PromQL engine's evaluation over one data set, so the answer to
  // `X > 3` or `max by (host) (X)` may be computed from X's answer (engine/dag/derived_answer.h).
  // A fake answering by the text of the question is not one.
  virtual bool EvaluatesPromql() const { return false; }
};

}  // namespace diagnose
