// The first screen of a report: what happened, what to do, and why, each with its strongest
// evidence, in at most ~40 lines for any job. Text, Markdown and the HTML header all print this one
// selection so the three never disagree about what matters.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/report/report.h"

namespace diagnose {

struct ScreenEvidence {
  std::string where;    // "promql sum by (host) (...) over 2026-02-24T18:01:00Z..19:21:00Z" | "log f.log:812"
  std::string detail;   // top values ("chi2822 1876, chi2831 1540 of 24") or the quoted log line
};

struct ScreenReason {
  std::string finding;                    // "<playbook>/<rule>"
  std::string summary;
  std::vector<std::string> hosts;
  std::optional<ScreenEvidence> evidence;
};

struct FirstScreen {
  std::vector<std::string> jobs;          // one headline per job: id, model, hosts, status, steps
  std::vector<std::string> job_details;   // TGS and heartbeat lines (subject first)
  std::optional<std::string> incomplete;
  std::string verdict;                    // "rdma-link-degradation (network, confirmed)"
  std::string summary;
  std::string causal_chain;
  std::string runner_up;
  std::string refuted;
  std::string action;
  std::string policy;                     // PolicyLine: the sweep policy's part in the action
  std::vector<Exclusion> exclude;
  std::string slurm_exclude;              // `exclude` for Slurm's --exclude, to paste
  std::vector<std::string> changes;       // "k=v"
  std::vector<std::string> notes;
  size_t notes_hidden = 0;
  std::vector<ScreenReason> why;
  std::vector<std::string> fired;         // "id [hosts]: summary" of fired findings not under why, shortened
  size_t fired_hidden = 0;
  size_t fired_total = 0;                 // every fired finding, those under why included
  size_t clear = 0, skipped = 0, errors = 0, suppressed = 0;
};

// `max_lines` bounds the text rendering; lists that do not fit are cut with a count of the rest.
FirstScreen BuildFirstScreen(const Report& report, size_t max_lines = 40);

// "13 fired, 67 clear, 1 suppressed, 2 skipped (insufficient evidence), 1 could not be evaluated"
// (the zero counts after `clear` left out): one tally, so text and markdown never count apart.
std::string FindingTally(const FirstScreen& screen);

// The strongest piece of a finding's evidence: PromQL that names its hosts, then any windowed
// PromQL, then a log line, then a derived value.
std::optional<ScreenEvidence> StrongestEvidence(const Finding& finding);

// A derived evidence value as a reader wants it, never raw JSON: a number rounded by one rule (an
// integer as is, 100 and above to the unit with thousands separators, else 1 decimal, below 1 three),
// a time-named key's epoch seconds as ISO-8601 UTC, an object as "key value, ...", a list joined.
std::string FormatEvidenceValue(const nlohmann::json& value);

// "over 2026-02-24T18:01:00Z..19:21:00Z" (the end's date dropped when it is the start's), or
// "at 2026-02-24T19:21:00Z" for an instant.
std::string IsoWindow(const TimeWindow& window);

}  // namespace diagnose
