// Writes the text side of a job output directory: the launcher log (Slurm, k8s primary + rank logs,
// or local), the job dir with its `log` symlink, Ray worker logs (the trainer's verbatim output),
// metrics-exporter logs and the Prometheus config/log. Content follows maxtext-slurm's formats
// (shared/reference/maxtext-slurm-formats.md §1-2).
#pragma once

#include <string>
#include <vector>

#include "engine/core/status.h"
#include "tools/fixturegen/scenario.h"
#include "tools/fixturegen/timeline.h"

namespace diagnose::fixturegen {

struct HostIdentity {
  std::string host;
  std::string ip;
  int pid = 0;           // training subprocess pid (Ray actor pid prefix)
};
std::vector<HostIdentity> Identities(const Scenario& scenario);

// Formats as used by the launcher: "%dh %dm %ds" / "%dm %ds" / "%ds".
std::string FormatWall(double seconds);
std::string FormatIso(double epoch);                 // 2026-02-24T19:21:00
std::string FormatStepLine(const StepRecord& step, bool moe_mtp = false);

// Writes everything below `workspace` (the outputs dir) except prometheus TSDB blocks.
// Returns the list of files written (relative to workspace), for mtime fixing and reporting.
StatusOr<std::vector<std::string>> WriteJobLogs(const Scenario& scenario, const Timeline& timeline,
                                                const std::string& workspace);

}  // namespace diagnose::fixturegen
