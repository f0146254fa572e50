// campaign: a randomized fault-injection campaign for diagnose (tools/campaign/README.md).
//   campaign generate --seed S --jobs N --out DIR
//   campaign score --diagnose BIN DIR [--json OUT] [--min-root-cause F ...]
//   campaign alerts --diagnose BIN DIR [--json OUT]
//   campaign sweep-generate --seed S --tuning N --model M --out DIR
//   campaign sweep-score --diagnose BIN DIR [--min-winner F --max-false-winner F --min-rules F]
#include <cstdio>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "tools/campaign/alert_score.h"
#include "tools/campaign/generate_jobs.h"
#include "tools/campaign/score.h"
#include "tools/campaign/sweep_generate.h"

using namespace diagnose;
using namespace diagnose::campaign;

int main(int argc, char** argv) {
  CLI::App app{"Randomized fault-injection campaign: generate jobs with a known truth, score diagnose on them"};
  app.require_subcommand(1);

  GenerateCampaignOptions generate;
  bool no_tsdb = false;
  CLI::App* gen = app.add_subcommand("generate", "write DIR/outputs, DIR/scenarios and DIR/truth.json");
  gen->add_option("--seed", generate.seed, "campaign seed (same seed, same scenarios and truth)")->required();
  gen->add_option("--jobs", generate.jobs, "scored jobs (a restore case adds its baseline job)")->required()->check(CLI::Range(1, 900));
  gen->add_option("--out", generate.out_dir, "output directory; nothing is written outside it")->required();
  gen->add_option("--jobs-parallel", generate.parallel, "jobs generated in parallel")->check(CLI::Range(1, 16));
  gen->add_flag("--no-tsdb", no_tsdb, "logs only, no TSDB blocks (for quick checks)");
  std::string encoder = "native";
  gen->add_option("--encoder", encoder, "how TSDB blocks are written: native, or promtool (the oracle)")
      ->check(CLI::IsMember({"native", "promtool"}));
  std::string shard;
  gen->add_option("--shard", shard,
                  "K/N: generate only the K-th of N shares of the jobs (0-based), no scenarios/ or truth.json; "
                  "N processes with K = 0..N-1 plus one --plan-only make the whole campaign");
  gen->add_flag("--plan-only", generate.plan_only, "write scenarios/ and truth.json, generate no job");
  gen->add_flag("--wide", generate.wide,
                "widened shapes (20-3,000 steps, 4-512 nodes, 5-60 s scrapes) plus overlapping faults, short/long dips, "
                "dips under checkpoint spikes, modest-cost throttling and nodes dying mid-job");
  gen->add_flag("--wider", generate.wider,
                "--wide plus shapes it never draws: RDMA and thermal faults overlapping in either order, a fault from "
                "the first step, 3-6 faulty hosts among 64-512, one-step and 90 % dips, a node dying while another "
                "throttles, a GPU fault or host OOM after a slowdown; node_hw named by instance or IP, scrape gaps");
  gen->add_flag("--widest", generate.widest,
                "--wider plus shapes it still never draws: a fault starting in init or compile (a slowdown, or a GPU "
                "abort before step 0), a fatal fault on the slow host itself, node_hw scraped by IP with no Ray series, "
                "two episodes of one fault on one host, 7-12 faulty hosts among 430-512, throttling no peer shows (one "
                "node, a room, one node hot from its first step), a fabric episode on most hosts, k8s and local "
                "launchers, a job still running; once a block: a fault in the job's last 2-5 %, node_hw down on one "
                "host the whole job, a TSDB snapshot that ends before the job");
  gen->add_flag("--perf", generate.perf,
                "add the performance regressions judged against a baseline run, each with a profiler window: "
                "perf-blocker, perf-overlap-loss, perf-slow-gpu, perf-noise");
  gen->add_option("--kinds", generate.kinds,
                  "only jobs whose truth kind starts with one of these (e.g. node-death,thermal), with their baselines; "
                  "the seed plans the same jobs as without it")
      ->delimiter(',');

  ScoreOptions score;
  std::optional<double> min_rc, min_action, min_precision, min_recall, min_healthy;
  CLI::App* sc = app.add_subcommand("score", "run diagnose on every job and compare with the truth");
  sc->add_option("--diagnose", score.diagnose_bin, "the diagnose binary")->required();
  sc->add_option("dir", score.dir, "a `campaign generate` output directory")->required();
  sc->add_option("--json", score.json_out, "also write the scores as JSON here");
  sc->add_option("--parallel", score.parallel, "diagnose runs in parallel")->check(CLI::Range(1, 16));
  sc->add_option("--timeout", score.timeout_seconds, "seconds per diagnose run");
  sc->add_option("--min-root-cause", min_rc, "fail below this fraction of right root causes");
  sc->add_option("--min-action", min_action, "fail below this fraction of right actions");
  sc->add_option("--min-precision", min_precision, "fail below this exclusion precision");
  sc->add_option("--min-recall", min_recall, "fail below this exclusion recall");
  sc->add_option("--min-healthy-none", min_healthy, "fail below this fraction of no-fault jobs judged none/none");

  AlertScoreOptions alerts;
  CLI::App* al = app.add_subcommand(
      "alerts", "replay the exported alerting rules on every job (diagnose rules replay): lead time on faulty jobs, "
                "false alarms on the rest");
  al->add_option("--diagnose", alerts.diagnose_bin, "the diagnose binary")->required();
  al->add_option("dir", alerts.dir, "a `campaign generate` output directory")->required();
  al->add_option("--json", alerts.json_out, "also write the scores as JSON here");
  al->add_option("--parallel", alerts.parallel, "replays in parallel")->check(CLI::Range(1, 16));

  SweepGenerateOptions sweep_gen;
  CLI::App* sg = app.add_subcommand(
      "sweep-generate", "write randomized tuning and model sweeps with their truth: DIR/tuning-K/, DIR/model-K/ (issue 34)");
  sg->add_option("--seed", sweep_gen.seed, "seed (same seed, same sweeps)")->required();
  sg->add_option("--tuning", sweep_gen.tuning_sweeps, "tuning sweeps (36-50 jobs each)")->check(CLI::Range(0, 500));
  sg->add_option("--model", sweep_gen.model_sweeps, "model sweeps (6-8 models x 3 commits)")->check(CLI::Range(0, 500));
  sg->add_option("--out", sweep_gen.out_dir, "output directory; nothing is written outside it")->required();
  SweepScoreOptions sweep_score;
  CLI::App* ss = app.add_subcommand("sweep-score", "run diagnose sweep / sweep compare on each generated sweep, score it");
  ss->add_option("--diagnose", sweep_score.diagnose, "the diagnose binary")->required();
  ss->add_option("dir", sweep_score.dir, "a `campaign sweep-generate` output directory")->required();
  ss->add_option("--json", sweep_score.json_out, "also write the scores as JSON here");
  ss->add_option("--min-winner", sweep_score.min_winner, "fail below this share of true winners named");
  ss->add_option("--max-false-winner", sweep_score.max_false_winner, "fail above this share of null sweeps crowned");
  ss->add_option("--min-rules", sweep_score.min_rules,
                 "fail below this share of recovery rules, nodelist checks and model-sweep outcomes right");
  CLI11_PARSE(app, argc, argv);

  if (sg->parsed()) {
    Status status = GenerateSweeps(sweep_gen);
    if (!status.ok()) {
      std::fprintf(stderr, "campaign: %s\n", status.message().c_str());
      return 1;
    }
    return 0;
  }
  if (ss->parsed()) return ScoreSweeps(sweep_score);

  if (gen->parsed()) {
    generate.write_tsdb = !no_tsdb;
    generate.block_encoder = *BlockEncoderNamed(encoder);
    if (!shard.empty() && std::sscanf(shard.c_str(), "%d/%d", &generate.shard, &generate.shards) != 2) {
      std::fprintf(stderr, "campaign: --shard %s: expected K/N, e.g. 0/4\n", shard.c_str());
      return 2;
    }
    Status status = GenerateCampaign(generate);
    if (!status.ok()) {
      std::fprintf(stderr, "campaign: %s\n", status.message().c_str());
      return 1;
    }
    return 0;
  }
  if (al->parsed()) {
    auto quiet = ScoreAlerts(alerts);
    if (!quiet.ok()) {
      std::fprintf(stderr, "campaign: %s\n", quiet.status().message().c_str());
      return 2;
    }
    return *quiet ? 0 : 1;
  }
  score.thresholds = {min_rc, min_action, min_precision, min_recall, min_healthy};
  auto passed = ScoreCampaign(score);
  if (!passed.ok()) {
    std::fprintf(stderr, "campaign: %s\n", passed.status().message().c_str());
    return 2;
  }
  return *passed ? 0 : 1;
}
