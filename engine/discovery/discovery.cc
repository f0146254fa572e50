#include "engine/discovery/discovery.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>

#include "engine/core/bounded_yaml.h"
#include "engine/core/iso_time.h"
#include "engine/core/utf8.h"
#include "engine/core/yaml_reader.h"
#include "engine/tsdb/promql_escape.h"

namespace diagnose {

StatusOr<TimeRange> ParseTimeRange(const std::string& text) {
  const size_t dots = text.find("..");
  if (dots == std::string::npos || text.find("..", dots + 2) != std::string::npos)
    return InvalidArgumentError("'" + OneLine(text) + "' is not START..END");
  auto end_of = [](const std::string& part) -> StatusOr<double> {
    if (!part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      if (part.size() > 11) return InvalidArgumentError("'" + part + "' is too far in the future for epoch seconds");
      return static_cast<double>(std::stoll(part));
    }
    StatusOr<int64_t> t = ParseIsoTime(part);
    if (!t.ok()) return InvalidArgumentError("'" + OneLine(part) + "' is neither ISO-8601 nor epoch seconds");
    return static_cast<double>(*t);
  };
  ASSIGN_OR_RETURN(double start, end_of(text.substr(0, dots)));
  ASSIGN_OR_RETURN(double end, end_of(text.substr(dots + 2)));
  if (!(start < end)) return InvalidArgumentError("'" + OneLine(text) + "' does not start before it ends");
  return TimeRange{start, end};
}
namespace {

using Clock = std::chrono::steady_clock;

// Range selectors longer than this are split, so a long job's raw tb_step samples come back in
// pieces of bounded size.
constexpr double kStepChunkSeconds = 86400;
// A step count no run reaches (2^53: doubles hold every integer below it); a sample claiming more
// is not a step.
constexpr double kMaxPlausibleStep = 9007199254740992.0;
constexpr double kLatestPlausibleTime = 4102444800;   // 2100-01-01: no recorded sample is later
constexpr double kMaxRangeSeconds = 92 * 86400.0;     // a quarter: longer than any one job's run

std::string FormatTime(double t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", t);
  return buf;
}

std::string LabelKey(const Labels& labels) {
  std::string key;
  for (const auto& [k, v] : labels) {
    if (k == "__name__") continue;
    key += k;
    key += '\x1f';
    key += v;
    key += '\x1e';
  }
  return key;
}

// hosts_from of a family or a heartbeat: "host" when absent.
StatusOr<std::string> ReadHostsFrom(const YamlReader& r, const YAML::Node& entry, const std::string& what) {
  std::string hosts_from = "host";
  RETURN_IF_ERROR(ReadOptional(r, entry, "hosts_from", hosts_from, &YamlReader::String));
  if (hosts_from != "host" && hosts_from != "instance")
    return r.Error(entry["hosts_from"], what + " hosts_from must be host or instance");
  return hosts_from;
}

Status ReadPositiveSeconds(const YamlReader& r, const YAML::Node& map, const std::string& key, double& out) {
  RETURN_IF_ERROR(ReadRequired(r, map, key, out, &YamlReader::Double));
  if (!(out > 0)) return r.Error(map[key], key + " must be positive");
  return Status::Ok();
}

StatusOr<FamilyExpectation> ReadFamily(const YamlReader& r, const YAML::Node& f) {
  FamilyExpectation family;
  RETURN_IF_ERROR(ReadRequired(r, f, "id", family.id, &YamlReader::String));
  RETURN_IF_ERROR(ReadRequired(r, f, "selector", family.selector, &YamlReader::String));
  ASSIGN_OR_RETURN(family.hosts_from, ReadHostsFrom(r, f, "family '" + family.id + "':"));
  RETURN_IF_ERROR(ReadOptional(r, f, "per_host", family.per_host, &YamlReader::Bool));
  RETURN_IF_ERROR(ReadOptional(r, f, "why", family.why, &YamlReader::String));
  return family;
}

StatusOr<HeartbeatSeries> ReadHeartbeat(const YamlReader& r, const YAML::Node& h) {
  HeartbeatSeries heartbeat;
  RETURN_IF_ERROR(ReadRequired(r, h, "selector", heartbeat.selector, &YamlReader::String));
  ASSIGN_OR_RETURN(heartbeat.hosts_from, ReadHostsFrom(r, h, "heartbeat"));
  return heartbeat;
}

}  // namespace

StatusOr<DiscoveryRules> LoadDiscoveryRules(const std::string& path) {
  DiscoveryRules rules;
  ASSIGN_OR_RETURN(const YAML::Node root, LoadBoundedYamlFile(path));
  YamlReader r(path);
  if (const YAML::Node families = root["families"]) {
    r.Each(families, YAML::NodeType::Sequence, "families must be a list", [&](const YAML::Node& f) -> Status {
      ASSIGN_OR_RETURN(FamilyExpectation family, ReadFamily(r, f));
      rules.families.push_back(std::move(family));
      return Status::Ok();
    });
  }
  if (const YAML::Node heartbeats = root["heartbeats"]) {
    r.Each(heartbeats, YAML::NodeType::Sequence, "heartbeats must be a list", [&](const YAML::Node& h) -> Status {
      ASSIGN_OR_RETURN(HeartbeatSeries heartbeat, ReadHeartbeat(r, h));
      rules.heartbeats.push_back(std::move(heartbeat));
      return Status::Ok();
    });
  }
  r.Part([&] { return ReadPositiveSeconds(r, root, "gap_threshold_seconds", rules.gap_threshold_seconds); });
  r.Part([&] { return ReadPositiveSeconds(r, root, "gap_resolution_seconds", rules.gap_resolution_seconds); });
  r.Part([&] { return ReadOptional(r, root, "ignored_instance_hosts", rules.ignored_instance_hosts, &YamlReader::Strings); });
  r.Part([&] { return ReadOptional(r, root, "address_names", rules.address_names, &YamlReader::Strings); });
  r.Part([&] { return ReadRequired(r, root, "step_metric", rules.step_metric, &YamlReader::String); });
  r.Part([&] { return ReadRequired(r, root, "staleness_metric", rules.staleness_metric, &YamlReader::String); });
  r.Part([&] { return ReadRequired(r, root, "wrong_db_max_steps_ahead", rules.wrong_db_max_steps_ahead, &YamlReader::Int); });
  r.Part([&] { return ReadRequired(r, root, "wrong_db_max_steps_behind", rules.wrong_db_max_steps_behind, &YamlReader::Int); });
  RETURN_IF_ERROR(r.Finish());
  return rules;
}

namespace {

std::string Days(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", seconds / 86400);
  return buf;
}

}  // namespace

// `selector` narrowed to series without a host label: {a="b"} -> {a="b", host=""}, name -> name{host=""};
// spaces and a trailing comma before the closing brace ({a="b", }) are dropped first.
std::string WithoutHostLabel(const std::string& selector) {
  const size_t last = selector.find_last_not_of(" \t");
  if (last == std::string::npos || selector[last] != '}') return selector + "{host=\"\"}";
  std::string inner = selector.substr(0, last);
  while (!inner.empty() && (inner.back() == ' ' || inner.back() == '\t' || inner.back() == ',')) inner.pop_back();
  const bool empty = !inner.empty() && inner.back() == '{';
  return inner + (empty ? "" : ", ") + "host=\"\"}";
}

// The logged run as the gap sentences tell it, saying where a start raised by the data came from.
std::string DescribeRun(const LoggedRunSpan& logged, const LoggedRunSpan& anchored) {
  const bool raised = anchored.start > logged.start;
  const std::string start =
      raised ? FormatTime(anchored.start) + " (its newest block's end minus the log's wall time)" : FormatTime(anchored.start);
  return std::isfinite(anchored.start) && std::isfinite(anchored.end) ? start + " to " + FormatTime(anchored.end)
         : std::isfinite(anchored.end)                                ? "ending " + FormatTime(anchored.end)
                                                                      : "starting " + start;
}

DiscoveryInputs InputsForSnapshot(const TsdbInventory& inventory, std::optional<TimeRange> log_window,
                                  std::optional<LoggedRunSpan> logged_run) {
  DiscoveryInputs inputs;
  std::optional<TimeRange> blocks;
  const std::optional<LoggedRunSpan> run_window =
      logged_run ? std::optional(AnchoredRun(inventory.blocks, *logged_run)) : std::nullopt;
  for (const auto& block : inventory.blocks) {
    const TimeRange held{block.min_time_ms / 1000.0, (block.max_time_ms - 1) / 1000.0};
    // A meta.json is untrusted: one claiming INT64_MIN..INT64_MAX would stretch the range every
    // query covers to billions of days. Its samples still lie where the other blocks' do.
    if (!(held.start >= 0 && held.end <= kLatestPlausibleTime && held.end - held.start <= kMaxRangeSeconds)) {
      inputs.gaps.push_back({"range-clipped", "", "", held.start, held.end,
                             "block " + block.ulid + " claims data from " + FormatTime(held.start) + " to " +
                                 FormatTime(held.end) + ", a span no job's TSDB holds: its range is not used to bound the queries"});
      continue;
    }
    if (run_window && BlockOutsideRun(block, *run_window)) {
      const bool after = held.start > run_window->end;
      const double off = after ? held.start - run_window->end : run_window->start - held.end;
      ObservabilityGap gap;
      gap.kind = "outside-run-window";
      gap.from = held.start;
      gap.to = held.end;
      gap.detail = "block " + block.ulid + " holds data from " + FormatTime(held.start) + " to " + FormatTime(held.end) +
                   ", " + Days(off) + " days " + (after ? "after" : "before") + " the job's run in its log (" +
                   DescribeRun(*logged_run, *run_window) +
                   "): clock skew when it was written, or a block of another job; not read as this job's data";
      inputs.gaps.push_back(std::move(gap));
      continue;
    }
    if (!blocks) blocks = held;
    blocks->start = std::min(blocks->start, held.start);
    blocks->end = std::max(blocks->end, held.end);
  }
  if (!blocks && !inputs.gaps.empty() && !inventory.has_wal) {   // a WAL may still hold the run: searched below
    inputs.untrusted = "every block of the TSDB lies outside the job's run as its log tells it (" +
                       inputs.gaps.front().detail + (inputs.gaps.size() > 1 ? "; and " + std::to_string(inputs.gaps.size() - 1) + " more" : "") +
                       "); missing samples are not taken for a healthy job";
    return inputs;
  }
  if (!inventory.has_wal && blocks) {
    inputs.known_range = blocks;
    inputs.search_window = log_window;   // read only to clip a range no job spans (ClipRange)
    return inputs;
  }
  // A head holds at most about 1.5 block ranges (3 h) beyond the last block.
  constexpr double kHeadSpanSeconds = 3 * 3600;
  TimeRange window;
  if (inventory.head_min_time_ms && inventory.head_max_time_ms) {
    // The server said what its head holds: search exactly there and in the blocks, not on a
    // guess from the log, which is all a WAL-only TSDB would otherwise have.
    window = {*inventory.head_min_time_ms / 1000.0, *inventory.head_max_time_ms / 1000.0};
    if (blocks) window = {std::min(window.start, blocks->start), std::max(window.end, blocks->end)};
  } else if (blocks && log_window) {
    window = {std::min(blocks->start, log_window->start), std::max(blocks->end + kHeadSpanSeconds, log_window->end)};
  } else if (blocks) {
    window = {blocks->start, blocks->end + kHeadSpanSeconds};
  } else if (log_window) {
    window = *log_window;
  } else {
    return inputs;  // Discover will say that it needs a window
  }
  inputs.search_window = window;
  return inputs;
}

bool Discovery::HasMetric(const std::string& name) const {
  return std::binary_search(metric_names.begin(), metric_names.end(), name);
}

std::optional<double> Discovery::TimeOfStep(int64_t step) const {
  std::optional<double> t;
  for (const auto& st : step_times) {
    if (st.step == step) t = st.time;
  }
  return t;
}

std::vector<std::string> Discovery::GapSentences() const {
  std::vector<std::string> out;
  for (const auto& g : gaps) out.push_back(g.detail);
  return out;
}

nlohmann::json Discovery::ToJson() const {
  nlohmann::json j;
  j["metric_names"] = metric_names;
  j["metric_count"] = metric_names.size();
  j["range"] = {{"start", range.start}, {"end", range.end}, {"source", range_source}};
  j["hosts"] = hosts;
  j["host_source"] = host_source;
  j["instance_to_host"] = instance_to_host;
  nlohmann::json steps = {{"real_samples", step_times.size()}, {"staleness_fills_excluded", staleness_fills_excluded}};
  if (!step_times.empty()) {
    steps["first"] = {{"step", step_times.front().step}, {"time", step_times.front().time}};
    steps["last"] = {{"step", step_times.back().step}, {"time", step_times.back().time}};
  }
  j["step_map"] = steps;
  j["gaps"] = gaps;
  j["wrong_database_guard"] = guard;
  j["queries"] = queries;
  j["elapsed_seconds"] = elapsed_seconds;
  return j;
}

namespace {

class Discoverer {
 public:
  Discoverer(QueryClient& client, const DiscoveryInputs& inputs, const DiscoveryRules& rules)
      : client_(client),
        inputs_(inputs),
        expected_(inputs.expected_hosts.begin(), inputs.expected_hosts.end()),
        rules_(rules) {}

  StatusOr<Discovery> Run() {
    const auto started = Clock::now();
    if (!inputs_.untrusted.empty()) return FailedPreconditionError(inputs_.untrusted);
    d_.gaps = inputs_.gaps;
    RETURN_IF_ERROR(StillInTime("finding the data range"));
    RETURN_IF_ERROR(FindRange());
    ClipRange();
    RETURN_IF_ERROR(StillInTime("listing the metric names"));
    // Every label-value question at once, then every query: none waits for another's answer except
    // the step queries, which wait for the metric names. The answers are read in the order the
    // questions used to be asked one at a time, so the gaps and names are the same.
    const std::vector<LabelValuesQuestion> questions = LabelQuestions();
    auto labels = client_.LabelValuesBatch(questions);
    d_.queries += static_cast<int>(questions.size());
    auto& names = labels[kNamesAnswer];
    if (!names.ok()) return names.status().WithContext("discovering metric names on " + client_.Describe());
    d_.metric_names = *names;
    std::sort(d_.metric_names.begin(), d_.metric_names.end());
    if (d_.metric_names.empty()) {
      Gap("missing-family", "", "", "the TSDB holds no series between " + FormatTime(d_.range.start) + " and " +
                                        FormatTime(d_.range.end));
    }
    RETURN_IF_ERROR(StillInTime("finding the hosts"));
    const DiscoveryQueries queries = Queries();
    const std::vector<StatusOr<QueryResult>> answers = client_.RunBatch(queries.batch);
    d_.queries += static_cast<int>(queries.batch.size());
    FindHosts(labels, queries, answers);
    RETURN_IF_ERROR(StillInTime("checking the metric families"));
    CheckFamilies(labels);
    RETURN_IF_ERROR(StillInTime("checking the families"));
    FindSilentIntervalsAndSteps(queries, answers);
    RETURN_IF_ERROR(StillInTime("mapping steps to time"));
    Guard();
    d_.elapsed_seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return std::move(d_);
  }

 private:
  bool PastDeadline() const { return inputs_.deadline && Clock::now() >= *inputs_.deadline; }

  // Between stages, and where a loop over families or answers stopped early at the deadline: what
  // was found is not a discovery to decide on.
  Status StillInTime(const std::string& stage) const {
    if (!PastDeadline()) return Status::Ok();
    return DeadlineExceededError("the run's deadline passed while " + stage + " on " + client_.Describe() + " (" +
                                 std::to_string(d_.queries) + " queries asked)");
  }

  template <typename T>
  StatusOr<T> Ask(StatusOr<T> r) {
    ++d_.queries;
    return r;
  }

  void Gap(std::string kind, std::string host, std::string family, std::string detail, double from = 0,
           double to = 0) {
    d_.gaps.push_back({std::move(kind), std::move(host), std::move(family), from, to, std::move(detail)});
  }

  void QueryFailed(const std::string& what, const Status& status) {
    Gap("query-failed", "", "", "could not ask " + what + ": " + status.message());
  }

  // When the heartbeat series were scraped, as values: a range query repeats a series' last sample
  // for the lookback (5 min in Prometheus) after it ends, so evaluation times would move the job's
  // end by that much (and "after the last step" windows with it).
  std::string HeartbeatScrapeTimes() const { return OverHeartbeats("max(timestamp(", "))"); }
  // Where the heartbeat series have data at all: 2.42 evaluates timestamp() sample by sample at every
  // step (1.23 s of its CPU at 1,024 nodes against 0.07 s for this count over the same range), so the
  // range asks for presence and the scrape times are read at its two ends only.
  std::string HeartbeatPresence() const { return OverHeartbeats("count(", ")"); }
  std::string OverHeartbeats(const std::string& open, const std::string& close) const {
    std::string q;
    for (const auto& hb : rules_.heartbeats) q += (q.empty() ? "" : " or ") + (open + hb.selector + close);
    return q;
  }

  // The heartbeat's scrape time at evaluation time `t` (a backend whose timestamp() gives the
  // evaluation time is bounded by it); nullopt when nothing answered there.
  StatusOr<std::optional<double>> ScrapeTimeAt(double t) {
    auto r = Ask(client_.Run(Query::Instant(HeartbeatScrapeTimes(), t, "discovery:range")));
    if (!r.ok()) return r.status();
    std::optional<double> scraped;
    for (const auto& series : r->series)
      for (const auto& sample : series.samples) {
        const double at = std::isfinite(sample.v) && sample.v > 0 ? std::min(sample.v, sample.t) : sample.t;
        scraped = scraped ? std::max(*scraped, at) : at;
      }
    return scraped;
  }

  Status FindRange() {
    if (inputs_.known_range) {
      d_.range = *inputs_.known_range;
      d_.range_source = "block-meta";
      return Status::Ok();
    }
    if (!inputs_.search_window) {
      return InvalidArgumentError("discovery on " + client_.Describe() +
                                  " needs a time window: the job's log gives neither its start (artifact id) "
                                  "nor its end (crash line, log time); pass --window START..END "
                                  "(recorded data is never queried at \"now\")");
    }
    d_.range = *inputs_.search_window;
    d_.range_source = "search-window";
    if (rules_.heartbeats.empty()) return Status::Ok();
    auto r = Ask(client_.Run(Query::Range(HeartbeatPresence(), d_.range.start, d_.range.end,
                                          rules_.gap_resolution_seconds, "discovery:range")));
    if (!r.ok()) return r.status().WithContext("finding the data range on " + client_.Describe());
    double first_step = INFINITY, last_step = -INFINITY;
    for (const auto& series : r->series)
      for (const auto& sample : series.samples) {
        first_step = std::min(first_step, sample.t);
        last_step = std::max(last_step, sample.t);
      }
    std::optional<double> first, last;
    if (std::isfinite(first_step)) {
      auto at_first = ScrapeTimeAt(first_step);
      auto at_last = at_first.ok() ? ScrapeTimeAt(last_step) : at_first;
      if (!at_last.ok()) return at_last.status().WithContext("finding the data range on " + client_.Describe());
      // A backend whose instant lookback missed what its range saw: the step bounds that end.
      first = at_first->value_or(first_step);
      last = at_last->value_or(last_step);
    }
    if (first && last) {
      d_.range = {std::min(*first, *last), std::max(*first, *last)};
      d_.range_source = "queries";
    } else {
      Gap("missing-family", "", "", "no heartbeat series in the search window " + FormatTime(d_.range.start) + " to " +
                                        FormatTime(d_.range.end));
    }
    return Status::Ok();
  }

  // A block's meta.json or an endpoint's samples may claim any times (INT64_MIN..MAX ms, ±1e14 s, ten
  // years): the per-day step queries over such a range held gigabytes. The range is kept to real
  // clock times and to kMaxRangeSeconds, first around the log's window when there is one, else
  // ending where it ends, and a gap says what was dropped.
  void ClipRange() {
    TimeRange& r = d_.range;
    const TimeRange claimed = r;
    const auto plausible = [&] { return r.end - r.start <= kMaxRangeSeconds; };
    r.start = std::isnan(r.start) ? 0 : std::clamp(r.start, 0.0, kLatestPlausibleTime);
    r.end = std::isnan(r.end) ? kLatestPlausibleTime : std::clamp(r.end, r.start, kLatestPlausibleTime);
    if (!plausible() && inputs_.search_window) {
      r.start = std::max(r.start, inputs_.search_window->start - 86400);
      r.end = std::max(r.start, std::min(r.end, inputs_.search_window->end + 86400));
    }
    if (!plausible()) r.start = r.end - kMaxRangeSeconds;
    if (r.start == claimed.start && r.end == claimed.end) return;
    Gap("range-clipped", "", "", "the " + d_.range_source + " range claimed " + FormatTime(claimed.start) + " to " +
                                     FormatTime(claimed.end) + "; only " + FormatTime(r.start) + " to " +
                                     FormatTime(r.end) + " was read",
        r.start, r.end);
  }

  bool IgnoredHost(const std::string& h) const {
    return h.empty() || std::find(rules_.ignored_instance_hosts.begin(), rules_.ignored_instance_hosts.end(), h) !=
                            rules_.ignored_instance_hosts.end();
  }

  // The node as the job's nodelist names it. An exporter started with `hostname` reports an FQDN
  // (node07.cluster.example) where Slurm, the log and the decision say `hostname -s` (node07); the
  // first label names the node only when the nodelist holds it, so no other host is renamed. The
  // alias is kept for the query results, which carry what the exporters reported.
  std::string NodeName(const std::string& reported) {
    if (reported.empty() || expected_.count(reported)) return reported;
    if (auto named = address_to_node_.find(reported); named != address_to_node_.end()) return named->second;
    const size_t dot = reported.find('.');
    if (dot == std::string::npos || dot == 0) return reported;
    const std::string short_name = reported.substr(0, dot);
    if (!expected_.count(short_name)) return reported;
    d_.instance_to_host.emplace(reported, short_name);
    return short_name;
  }

  void AddHost(const std::string& host, const std::string& source) {
    if (IgnoredHost(host)) return;
    d_.host_source.emplace(host, source);
  }

  // The label-value questions, in the order their answers are read: the metric names, the hosts
  // (kHostAnswer .. kAllInstancesAnswer), then one per metric family.
  static constexpr size_t kNamesAnswer = 0, kHostAnswer = 1, kInstancesWithoutHostAnswer = 2,
                          kIpsWithoutHostOrInstanceAnswer = 3, kAllInstancesAnswer = 4, kFirstFamilyAnswer = 5;
  std::vector<LabelValuesQuestion> LabelQuestions() const {
    const double s = d_.range.start, e = d_.range.end;
    std::vector<LabelValuesQuestion> questions = {
        {"__name__", {}, s, e},
        {"host", {}, s, e},
        // Series without a host label (Ray's) name their node through instance, or ip alone.
        {"instance", {R"({host="",instance!=""})"}, s, e},
        {"ip", {R"({host="",instance="",ip!=""})"}, s, e},
        {"instance", {}, s, e},
    };
    for (const auto& fam : rules_.families) {
      const std::string label = fam.hosts_from == "host" ? "host" : "instance";
      questions.push_back({fam.per_host ? label : "__name__", {fam.selector}, s, e});
    }
    return questions;
  }

  // The queries of discovery, one batch: instance/host pairs, heartbeats, then steps (and fills).
  struct DiscoveryQueries {
    std::vector<Query> batch;
    size_t pairs = 0;            // batch[0, pairs)
    size_t heartbeats = 0;       // batch[pairs, pairs + heartbeats)
    bool has_steps = false;      // the rest
  };

  DiscoveryQueries Queries() const {
    const double s = d_.range.start, e = d_.range.end;
    DiscoveryQueries out;
    // instance -> host: authoritative where a series carries both, else the instance's host part.
    const std::string window = PromqlSeconds(e - s + 1);
    for (const auto& hb : rules_.heartbeats) {
      if (hb.hosts_from != "host") continue;
      out.batch.push_back(Query::Instant("group by (instance, host) (last_over_time(" + hb.selector + "[" + window +
                                         "]))", e, "discovery:instance-host"));
    }
    out.pairs = out.batch.size();
    for (const auto& hb : rules_.heartbeats) {
      out.batch.push_back(Query::Range("count by (" + hb.hosts_from + ") (" + hb.selector + ")", s, e,
                                       rules_.gap_resolution_seconds, "discovery:heartbeat"));
    }
    out.heartbeats = out.batch.size() - out.pairs;
    out.has_steps = !rules_.step_metric.empty() && d_.HasMetric(rules_.step_metric);
    if (!out.has_steps) return out;
    for (double a = s - 1; a < e && !PastDeadline(); a += kStepChunkSeconds) {
      const double b = std::min(a + kStepChunkSeconds, e);
      const std::string window_of_chunk = "[" + PromqlSeconds(b - a) + "]";
      out.batch.push_back(Query::Instant(rules_.step_metric + window_of_chunk, b, "discovery:steps"));
      if (d_.HasMetric(rules_.staleness_metric)) {
        out.batch.push_back(Query::Instant(rules_.staleness_metric + window_of_chunk, b, "discovery:fills"));
      }
    }
    return out;
  }

  using LabelAnswers = std::vector<StatusOr<std::vector<std::string>>>;

  void FindHosts(const LabelAnswers& labels, const DiscoveryQueries& queries,
                 const std::vector<StatusOr<QueryResult>>& answers) {
    // Addresses are named first, so that a host label holding one maps to its node as an instance does.
    std::vector<std::string> reported;
    if (const auto& hosts = labels[kHostAnswer]; hosts.ok()) reported = *hosts;
    if (const auto& inst = labels[kInstancesWithoutHostAnswer]; inst.ok())
      for (const auto& i : *inst) reported.push_back(InstanceHost(i));
    NameAddresses(reported);
    if (const auto& hosts = labels[kHostAnswer]; hosts.ok()) {
      for (const auto& h : *hosts) AddHost(NodeName(h), "host label");
    } else {
      QueryFailed("the host label values", hosts.status());
    }
    if (const auto& inst = labels[kInstancesWithoutHostAnswer]; inst.ok()) {
      for (const auto& i : *inst) AddHost(NodeName(InstanceHost(i)), "instance");
    } else {
      QueryFailed("instances of series without a host label", inst.status());
    }
    if (const auto& ips = labels[kIpsWithoutHostOrInstanceAnswer]; ips.ok()) {
      for (const auto& ip : *ips) AddHost(ip, "ip");
    } else {
      QueryFailed("ips of series without host or instance", ips.status());
    }
    for (size_t i = 0; i < queries.pairs && i < answers.size(); ++i) {
      if (!answers[i].ok()) {
        QueryFailed("the instance/host pairs", answers[i].status());
        continue;
      }
      for (const auto& series : answers[i]->series) {
        auto inst = series.labels.find("instance"), host = series.labels.find("host");
        if (inst != series.labels.end() && host != series.labels.end()) d_.instance_to_host[inst->second] = NodeName(host->second);
      }
    }
    if (const auto& all = labels[kAllInstancesAnswer]; all.ok()) {
      for (const auto& i : *all) {
        const std::string host = NodeName(InstanceHost(i));
        if (!d_.instance_to_host.count(i) && !IgnoredHost(host)) d_.instance_to_host[i] = host;
      }
    } else {
      QueryFailed("the instance label values", all.status());
    }
    for (const auto& [h, src] : d_.host_source) d_.hosts.push_back(h);
    for (const auto& expected : inputs_.expected_hosts) {
      if (!d_.host_source.count(expected)) {
        Gap("host-missing", expected, "", "host " + expected + " is in the job's nodelist but has no series in the TSDB");
      }
    }
  }

  // An exporter scraped by address (instance "10.0.3.7:9400", no host label) would otherwise name
  // its node by that address: findings, exclusions and Slurm's --exclude need the node's name.
  // Asked only when some instance is an address, from series that carry both (Ray's node metrics:
  // ip="10.0.3.7", instance="node07:55080"); what no such series names, the job's log may (each
  // task's bind= address, DiscoveryInputs::logged_addresses); an address neither names stays as it is.
  void NameAddresses(const std::vector<std::string>& reported_hosts) {
    if (std::none_of(reported_hosts.begin(), reported_hosts.end(), [](const std::string& h) { return IsAddress(h); })) return;
    if (!rules_.address_names.empty()) NameAddressesFromSeries();
    for (const auto& [address, node] : inputs_.logged_addresses) {
      if (!IsAddress(address) || node.empty() || IsAddress(node) || IgnoredHost(node)) continue;
      if (address_to_node_.emplace(address, node).second) d_.instance_to_host.emplace(address, node);
    }
  }

  void NameAddressesFromSeries() {
    auto named = Ask(client_.SeriesMatching(rules_.address_names, d_.range.start, d_.range.end));
    if (!named.ok()) {
      QueryFailed("the names of the nodes' addresses", named.status());
      return;
    }
    // An address several nodes report (a container bridge's 172.17.0.2 on every node) names none.
    std::map<std::string, std::set<std::string>> nodes_of;
    for (const auto& labels : *named) {
      auto ip = labels.find("ip"), instance = labels.find("instance");
      if (ip == labels.end() || instance == labels.end() || ip->second.empty()) continue;
      const std::string node = NodeName(InstanceHost(instance->second));
      if (node.empty() || IsAddress(node) || IgnoredHost(node)) continue;
      nodes_of[ip->second].insert(node);
    }
    for (const auto& [ip, nodes] : nodes_of) {
      if (nodes.size() != 1) continue;
      address_to_node_.emplace(ip, *nodes.begin());
      d_.instance_to_host.emplace(ip, *nodes.begin());
    }
  }

  // A family whose exporters set no host label on some nodes (scraped by name or address, or
  // relabelled by a fleet store) names those nodes in `instance`: asked only when the host label
  // leaves some node uncovered, so a job whose every series has one asks nothing more.
  void CoverThroughInstance(const FamilyExpectation& fam, std::set<std::string>* covered) {
    auto instances = Ask(client_.LabelValues("instance", {WithoutHostLabel(fam.selector)}, d_.range.start, d_.range.end));
    if (!instances.ok()) {
      QueryFailed("instances of family " + fam.id + " without a host label", instances.status());
      return;
    }
    for (const auto& i : *instances) {
      const std::string node = NodeName(InstanceHost(i));
      if (!IgnoredHost(node)) covered->insert(node);
    }
  }

  void CheckFamilies(const LabelAnswers& labels) {
    for (size_t f = 0; f < rules_.families.size(); ++f) {
      if (PastDeadline()) return;
      const auto& fam = rules_.families[f];
      const auto& values = labels[kFirstFamilyAnswer + f];
      if (!values.ok()) {
        QueryFailed("family " + fam.id, values.status());
        continue;
      }
      std::set<std::string> covered;
      if (fam.per_host) {
        for (const auto& v : *values) covered.insert(NodeName(fam.hosts_from == "host" ? v : InstanceHost(v)));
        if (fam.hosts_from == "host" && covered.size() < d_.hosts.size()) CoverThroughInstance(fam, &covered);
      }
      if (values->empty() && covered.empty()) {
        Gap("missing-family", "", fam.id,
            "no " + fam.id + " series (" + fam.selector + ")" + (fam.why.empty() ? "" : ": " + fam.why + " cannot be checked"));
        continue;
      }
      if (!fam.per_host) continue;
      for (const auto& h : d_.hosts) {
        if (!covered.count(h)) {
          Gap("host-missing-family", h, fam.id, "host " + h + " has no " + fam.id + " series (" + fam.selector + ")");
        }
      }
    }
  }

  void FindSilentIntervalsAndSteps(const DiscoveryQueries& queries, const std::vector<StatusOr<QueryResult>>& answers) {
    const size_t first_step = queries.pairs + queries.heartbeats;
    for (size_t i = 0; i < queries.heartbeats; ++i) {
      if (PastDeadline()) return;
      const auto& answer = answers[queries.pairs + i];
      if (!answer.ok()) {
        QueryFailed("heartbeat " + rules_.heartbeats[i].selector, answer.status());
        continue;
      }
      SilentIntervals(*answer, rules_.heartbeats[i]);
    }
    if (!queries.has_steps) return;
    std::map<std::string, double> fills;          // label key + ms -> fill value
    std::map<std::string, Sample> steps;          // label key + ms -> step sample (dedupes chunk edges)
    for (size_t i = first_step; i < answers.size(); ++i) {
      if (PastDeadline()) return;
      if (!answers[i].ok()) {
        QueryFailed(queries.batch[i].promql, answers[i].status());
        continue;
      }
      const bool is_fill = queries.batch[i].id == "discovery:fills";
      for (const auto& series : answers[i]->series) {
        const std::string key = LabelKey(series.labels);
        for (const auto& sample : series.samples) {
          // Answers are untrusted: llround of NaN, Inf or anything past int64 is undefined, and a
          // step of -Inf became INT64_MIN, whose distance to the log's step overflowed.
          if (!(std::fabs(sample.t) < 1e15) || !(std::fabs(sample.v) < kMaxPlausibleStep)) continue;
          const std::string k = key + std::to_string(std::llround(sample.t * 1000));
          if (is_fill) fills[k] = sample.v; else steps[k] = sample;
        }
      }
    }
    for (const auto& [k, sample] : steps) {
      auto fill = fills.find(k);
      if (fill != fills.end() && fill->second == 1) {
        ++d_.staleness_fills_excluded;
        continue;
      }
      d_.step_times.push_back({static_cast<int64_t>(std::llround(sample.v)), sample.t});
    }
    std::sort(d_.step_times.begin(), d_.step_times.end(),
              [](const StepTime& a, const StepTime& b) { return a.time < b.time; });
  }

  void SilentIntervals(const QueryResult& result, const HeartbeatSeries& hb) {
    const double s = d_.range.start, e = d_.range.end, res = rules_.gap_resolution_seconds;
    const double threshold = rules_.gap_threshold_seconds;
    for (const auto& series : result.series) {
      if (PastDeadline()) return;
      auto it = series.labels.find(hb.hosts_from);
      if (it == series.labels.end()) continue;
      const std::string host = NodeName(hb.hosts_from == "host" ? it->second : InstanceHost(it->second));
      if (IgnoredHost(host)) continue;
      auto report = [&](double from, double to) {
        if (to - from < threshold) return;
        Gap("silent-interval", host, "", "host " + host + " reported no " + hb.selector + " from " + FormatTime(from) +
                                             " to " + FormatTime(to) + " (" + std::to_string(static_cast<int>(to - from)) +
                                             " s)", from, to);
      };
      const auto& samples = series.samples;
      if (samples.empty()) continue;
      report(s, samples.front().t);
      for (size_t i = 1; i < samples.size(); ++i) {
        if (samples[i].t - samples[i - 1].t > 1.5 * res) report(samples[i - 1].t, samples[i].t);
      }
      report(samples.back().t, e);
    }
  }

  void Guard() {
    WrongDatabaseGuard& g = d_.guard;
    g.log_last_step = inputs_.log_last_step;
    if (!d_.step_times.empty()) {
      const auto& last = d_.step_times.back();
      g.tsdb_last_step = last.step;
      g.tsdb_last_step_time = last.time;
    }
    if (!g.tsdb_last_step) {
      g.status = "unverifiable";
      g.message = "the TSDB has no real " + rules_.step_metric + " samples, so it cannot be matched to the job's log";
      return;
    }
    if (!g.log_last_step) {
      g.status = "unverifiable";
      g.message = "the log has no completed step to compare with the TSDB's last step " + std::to_string(*g.tsdb_last_step);
      return;
    }
    int64_t ahead = 0;
    const bool overflow = __builtin_sub_overflow(*g.tsdb_last_step, *g.log_last_step, &ahead);
    if (overflow || ahead > rules_.wrong_db_max_steps_ahead || ahead < -rules_.wrong_db_max_steps_behind) {
      g.status = "mismatch";
      g.message = "the TSDB's last real step is " + std::to_string(*g.tsdb_last_step) + " but the log's last step is " +
                  std::to_string(*g.log_last_step) + ": this TSDB probably belongs to another job";
    } else {
      g.status = "match";
      g.message = "the TSDB's last real step " + std::to_string(*g.tsdb_last_step) + " agrees with the log's " +
                  std::to_string(*g.log_last_step);
    }
  }

  QueryClient& client_;
  const DiscoveryInputs& inputs_;
  const std::set<std::string> expected_;
  const DiscoveryRules& rules_;
  std::map<std::string, std::string> address_to_node_;   // "10.0.3.7" -> "node07"
  Discovery d_;
};

}  // namespace

StatusOr<Discovery> Discover(QueryClient& client, const DiscoveryInputs& inputs, const DiscoveryRules& rules) {
  return Discoverer(client, inputs, rules).Run();
}

}  // namespace diagnose
