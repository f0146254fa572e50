// What the logs alone can conclude: turns JobFacts into a contract Report (jobs[], findings quoting
// file:line, and a verdict/decision only where the signature table gives a log-only verdict for the
// primary class; otherwise `unknown` plus the TSDB questions to ask next). The pipeline refines it
// with playbooks; the CLI can print it as is when no TSDB is available.
#pragma once

#include "engine/report/report.h"
#include "engine/triage/job_facts.h"
#include "engine/triage/signature_table.h"

namespace diagnose {

JobEntry JobEntryFromFacts(const JobFacts& facts, const std::string& role = "subject");

// Findings for every matched class (and the heartbeat and TGS facts), each citing log evidence.
std::vector<Finding> LogFindings(const JobFacts& facts, const SignatureTable& table);

// A complete log-only report for one job; report.facts[facts.id] holds the JobFacts JSON.
Report LogOnlyReport(const JobFacts& facts, const SignatureTable& table);

}  // namespace diagnose
