// `campaign sweep-score`: runs diagnose on each generated sweep and checks it against truth.json.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include <boost/math/distributions/normal.hpp>
#include <nlohmann/json.hpp>

#include "tools/campaign/job_runs.h"
#include "tools/campaign/sweep_generate.h"

namespace diagnose::campaign {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kTimeoutSeconds = 300;

struct Tally {
  int winner_sweeps = 0, winner_named = 0;
  int weak_winner_sweeps = 0, weak_winner_named = 0;   // planted below what the design can show
  int null_sweeps = 0, null_crowned = 0;
  int rules = 0, rules_right = 0;
  int outcomes = 0, outcomes_right = 0;
  int agreements = 0, agreements_right = 0;
  double seconds_total = 0, seconds_max = 0;
  int runs = 0;
  json misses = json::array();
};

StatusOr<json> RunJson(const std::vector<std::string>& argv, const fs::path& runs, const std::string& name, Tally& t) {
  CommandRun run = RunJobCommand(argv, runs, name, ".json", kTimeoutSeconds);
  if (!run.status.ok()) return run.status;
  t.seconds_total += run.seconds;
  t.seconds_max = std::max(t.seconds_max, run.seconds);
  ++t.runs;
  json j = json::parse(run.output, nullptr, false);
  if (j.is_discarded()) return ParseError(name + ": diagnose printed no JSON");
  return j;
}

// What the sweep's design can show at best: the probability that the planted winner's delta clears
// a two-sided Bonferroni bound over every profile when the step noise is known exactly (no
// run-to-run noise is planted): steps per job from the profiler, one job per profile against three
// baseline repeats. Any rule that estimates its noise does no better.
constexpr double kWeakDesignPower = 0.8;
constexpr int kBaselineRepeats = 3;
constexpr double kDesignFamilyAlpha = 0.05;   // the leaderboard's family-wise error

double DesignPower(const json& truth) {
  const double steps = truth.value("profiler", false) ? 6 : 10;
  const double noise_pct = truth.value("noise_pct", 1.0);
  const double se_pct = noise_pct * std::sqrt(1 / steps + 1 / (kBaselineRepeats * steps));
  const double effect = truth["effects_pct"].value(truth["winner"].get<std::string>(), 0.0);
  const double family = std::max<double>(1, static_cast<double>(truth["effects_pct"].size()));
  boost::math::normal normal;
  const double critical = boost::math::quantile(boost::math::complement(normal, kDesignFamilyAlpha / 2 / family));
  return boost::math::cdf(normal, effect / se_pct - critical);
}

const json* FindCell(const json& sweep) {
  if (!sweep.contains("cells") || sweep["cells"].empty()) return nullptr;
  return &sweep["cells"][0];
}

Status ScoreTuning(const SweepScoreOptions& o, const fs::path& dir, const json& truth, Tally& t) {
  const fs::path runs = dir / "score";
  fs::create_directories(runs);
  ASSIGN_OR_RETURN(json out, RunJson({o.diagnose, "sweep", (dir / "outputs").string(), "--format", "json"}, runs,
                                     "sweep", t));
  const json* cell = FindCell(out);
  if (cell == nullptr) return ParseError(dir.string() + ": no cell in the answer");
  const json named = (*cell)["winner"];
  if (truth["winner"].is_null()) {
    ++t.null_sweeps;
    if (!named.is_null()) {
      ++t.null_crowned;
      t.misses.push_back({{"sweep", dir.filename().string()}, {"what", "winner named in a null sweep"}, {"named", named}});
    }
  } else {
    ++t.winner_sweeps;
    const double power = DesignPower(truth);
    const bool weak = power < kWeakDesignPower;
    t.weak_winner_sweeps += weak;
    if (named == truth["winner"]) ++t.winner_named, t.weak_winner_named += weak;
    else
      t.misses.push_back({{"sweep", dir.filename().string()},
                          {"what", "true winner not named"},
                          {"truth", truth["winner"]},
                          {"effect_pct", truth["effects_pct"][truth["winner"].get<std::string>()]},
                          {"noise_pct", truth["noise_pct"]},
                          {"profiler", truth["profiler"]},
                          {"design_power", power},
                          {"named", named},
                          {"conclusion", (*cell)["conclusion"]}});
  }
  std::map<std::string, std::string> rules;
  for (const auto& v : (*cell)["variants"]) rules[v["name"].get<std::string>()] = v["failures"]["rule"].get<std::string>();
  for (const auto& [profile, rule] : truth["rules"].items()) {
    ++t.rules;
    if (rules[profile] == rule.get<std::string>()) ++t.rules_right;
    else
      t.misses.push_back({{"sweep", dir.filename().string()}, {"profile", profile}, {"truth", rule}, {"got", rules[profile]}});
  }
  // Each job's status is `summary`'s (triage's, as `diagnose JOB`'s), and its TGS the same number
  // wherever the two windows coincide (profiler off, no outlier step left out).
  ASSIGN_OR_RETURN(json rows, RunJson({o.diagnose, "summary", (dir / "outputs").string(), "--logs-only", "--format", "json"},
                                      runs, "summary", t));
  std::map<std::string, json> by_id;
  for (const auto& row : rows) by_id[row.value("id", "")] = row;
  for (const auto& job : out["jobs"]) {
    ++t.agreements;
    const json& row = by_id[job["id"].get<std::string>()];
    const json& steady = job["steady"];
    bool agree = row.is_object() && row.value("status", "") == job["status"];
    if (agree && !steady["profiler_on"].get<bool>() && steady["outlier_steps"].empty() && !steady["steps_used"].empty())
      agree = row["tgs"].is_number() && std::fabs(row["tgs"].get<double>() - steady["mean_tgs"].get<double>()) < 1e-6;
    if (agree) ++t.agreements_right;
    else
      t.misses.push_back({{"sweep", dir.filename().string()}, {"what", "sweep and summary disagree"}, {"job", job["id"]},
                          {"summary", row}});
  }
  ++t.rules;
  if ((*cell)["off_nodelist_jobs"] == truth["off_nodelist_jobs"]) ++t.rules_right;
  else
    t.misses.push_back({{"sweep", dir.filename().string()}, {"what", "off-nodelist jobs"}, {"truth", truth["off_nodelist_jobs"]},
                        {"got", (*cell)["off_nodelist_jobs"]}});
  return Status::Ok();
}

Status ScoreModel(const SweepScoreOptions& o, const fs::path& dir, const json& truth, Tally& t) {
  const fs::path runs = dir / "score";
  fs::create_directories(runs);
  std::vector<std::string> argv = {o.diagnose, "sweep", "compare", "--outputs", (dir / "outputs").string(), "--format", "json"};
  for (const auto& c : truth["commits"]) argv.push_back("commit=" + c.get<std::string>().substr(0, 7));
  ASSIGN_OR_RETURN(json out, RunJson(argv, runs, "compare", t));
  for (const auto& e : truth["expected"]) {
    ++t.outcomes;
    std::string got = "(cell missing)";
    for (const auto& cell : out["cells"])
      if (cell["model"] == e["model"] && cell["nodes"] == e["nodes"]) {
        const json& col = cell["sweeps"][e["sweep"].get<size_t>()];
        got = col["outcome"].is_string() ? col["outcome"].get<std::string>() : "(none)";
      }
    // Within +-2 % is the runbook's "no regression"; a delta the interval cannot tell from zero is too.
    const std::string want = e["outcome"].get<std::string>();
    if (got == want || (want == "no regression" && got == "within noise")) ++t.outcomes_right;
    else
      t.misses.push_back({{"sweep", dir.filename().string()}, {"cell", e}, {"got", got}});
  }
  return Status::Ok();
}

double Share(int num, int den) { return den == 0 ? 1.0 : static_cast<double>(num) / den; }

}  // namespace

int ScoreSweeps(const SweepScoreOptions& o) {
  Tally t;
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(o.dir, ec))
    if (entry.is_directory() && fs::exists(entry.path() / "truth.json")) dirs.push_back(entry.path());
  if (ec || dirs.empty()) {
    std::fprintf(stderr, "campaign sweep-score: no generated sweep under %s\n", o.dir.c_str());
    return 2;
  }
  std::sort(dirs.begin(), dirs.end());
  for (const auto& dir : dirs) {
    StatusOr<std::string> text = ReadFile(dir / "truth.json");
    if (!text.ok()) {
      std::fprintf(stderr, "campaign sweep-score: %s\n", text.status().message().c_str());
      return 2;
    }
    const json truth = json::parse(*text, nullptr, false);
    const Status s = truth.value("kind", "") == "tuning" ? ScoreTuning(o, dir, truth, t) : ScoreModel(o, dir, truth, t);
    if (!s.ok()) {
      std::fprintf(stderr, "campaign sweep-score: %s: %s\n", dir.string().c_str(), s.message().c_str());
      return 2;
    }
  }
  const double winner = Share(t.winner_named, t.winner_sweeps);
  const double false_winner = t.null_sweeps == 0 ? 0.0 : Share(t.null_crowned, t.null_sweeps);
  const double rules = Share(t.rules_right + t.outcomes_right + t.agreements_right, t.rules + t.outcomes + t.agreements);
  std::printf("tuning sweeps with a true winner: %d, winner named %d (%.1f %%)\n", t.winner_sweeps, t.winner_named,
              100 * winner);
  std::printf("  of them planted below what the design can show (power < %.0f %% with the step noise known): %d, "
              "named %d\n", 100 * kWeakDesignPower, t.weak_winner_sweeps, t.weak_winner_named);
  std::printf("tuning sweeps with no real winner: %d, a winner named %d (%.1f %%)\n", t.null_sweeps, t.null_crowned,
              100 * false_winner);
  std::printf("recovery rules and nodelist checks right: %d/%d\n", t.rules_right, t.rules);
  std::printf("model-sweep outcomes right: %d/%d\n", t.outcomes_right, t.outcomes);
  std::printf("jobs where sweep agrees with summary (status; TGS where the windows coincide): %d/%d\n",
              t.agreements_right, t.agreements);
  std::printf("diagnose runs: %d, mean %.2f s, max %.2f s\n", t.runs, t.runs ? t.seconds_total / t.runs : 0.0,
              t.seconds_max);
  const json summary = {{"winner_sweeps", t.winner_sweeps},  {"winner_named", t.winner_named},
                        {"weak_winner_sweeps", t.weak_winner_sweeps}, {"weak_winner_named", t.weak_winner_named},
                        {"null_sweeps", t.null_sweeps},      {"null_crowned", t.null_crowned},
                        {"rules", t.rules},                  {"rules_right", t.rules_right},
                        {"outcomes", t.outcomes},            {"outcomes_right", t.outcomes_right},
                        {"agreements", t.agreements},        {"agreements_right", t.agreements_right},
                        {"mean_seconds", t.runs ? t.seconds_total / t.runs : 0.0},
                        {"max_seconds", t.seconds_max},      {"misses", t.misses}};
  if (!t.misses.empty()) std::printf("misses:\n%s\n", t.misses.dump(1).c_str());
  if (!o.json_out.empty()) {
    std::FILE* f = std::fopen(o.json_out.c_str(), "w");
    if (f != nullptr) {
      const std::string text = summary.dump(2) + "\n";
      std::fwrite(text.data(), 1, text.size(), f);
      std::fclose(f);
    }
  }
  const bool pass = winner >= o.min_winner && false_winner <= o.max_false_winner && rules >= o.min_rules;
  return pass ? 0 : 1;
}

}  // namespace diagnose::campaign
