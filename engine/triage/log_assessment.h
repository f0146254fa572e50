// What the logs alone can conclude about one job: its jobs[] entry, findings quoting file:line, and
// a verdict/decision only where the signature table gives a log-only verdict for the primary class;
// otherwise `unknown` plus the questions the TSDB is to answer. The pipeline refines it with the
// playbooks and assembles the report (engine/pipeline/assemble_report.h).
#pragma once

#include "engine/report/report.h"
#include "engine/report/job_facts.h"
#include "engine/triage/signature_table.h"

namespace diagnose {

JobEntry JobEntryFromFacts(const JobFacts& facts, JobRole role = JobRole::kSubject);

// Findings for every matched class (and the heartbeat and TGS facts), each citing log evidence.
std::vector<Finding> LogFindings(const JobFacts& facts, const SignatureTable& table);

struct LogAssessment {
  JobEntry job;
  std::vector<Finding> findings;
  Verdict verdict;
  // The action (and exclusions) the logs alone justify; notes are triage's own caveats.
  Decision decision;
  // What the logs leave for the metrics to decide (the signature's tsdb_questions), when they name
  // no cause themselves.
  std::vector<std::string> tsdb_questions;
};

LogAssessment AssessLogs(const JobFacts& facts, const SignatureTable& table, JobRole role = JobRole::kSubject);

}  // namespace diagnose
