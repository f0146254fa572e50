#include "engine/pipeline/group_diagnosis.h"

namespace diagnose {

void to_json(nlohmann::json& j, const GroupDiagnosis& diagnosis) {
  j = nlohmann::json{{"group", diagnosis.group}, {"job", diagnosis.job}};
  if (!diagnosis.error.empty()) {
    j["error"] = diagnosis.error;
    return;
  }
  j["root_cause"] = diagnosis.root_cause;
  j["confidence"] = diagnosis.confidence;
  j["decision"] = ToJson(diagnosis.decision);
}

std::vector<GroupDiagnosis> DiagnoseUnhealthyGroups(const BisectionResult& bisection, const DiagnoseOptions& options) {
  std::vector<GroupDiagnosis> diagnoses;
  for (const auto& row : bisection.rows) {
    if (row.status == GroupStatus::kHealthy || row.job.empty()) continue;
    GroupDiagnosis diagnosis;
    diagnosis.group = row.name;
    diagnosis.job = row.job;
    DiagnoseOptions job_options = options;
    job_options.job_ref = row.job;
    StatusOr<Report> report = RunDiagnosis(job_options);
    if (!report.ok()) {
      diagnosis.error = report.status().message();
    } else {
      diagnosis.root_cause = ActedOnRootCause(*report);
      diagnosis.confidence = report->verdict.confidence;
      diagnosis.decision = report->decision;
    }
    diagnoses.push_back(std::move(diagnosis));
  }
  return diagnoses;
}

std::string DiagnosisLine(const GroupDiagnosis& diagnosis) {
  std::string line = "diagnose " + diagnosis.job + ": ";
  if (!diagnosis.error.empty()) return line + "not diagnosed (" + diagnosis.error + ")";
  line += diagnosis.root_cause + " (" + std::string(ToString(diagnosis.confidence)) + ") -> " +
          std::string(ToString(diagnosis.decision.action));
  std::string hosts;
  for (const auto& x : diagnosis.decision.exclude) hosts += (hosts.empty() ? "" : ", ") + x.host;
  if (!hosts.empty()) line += ", exclude " + hosts;
  const std::string policy = PolicyLine(diagnosis.decision);
  if (!policy.empty()) line += "; " + policy;
  return line;
}

Decision DecisionWithDiagnoses(const Decision& throughput, const std::vector<GroupDiagnosis>& diagnoses) {
  int diagnosed = 0;
  const GroupDiagnosis* only = nullptr;
  for (const auto& d : diagnoses)
    if (d.error.empty()) ++diagnosed, only = &d;
  // A bisection that isolated hosts by itself keeps its exclusion unless the diagnosis acts too.
  const bool diagnosis_decides =
      diagnosed == 1 && diagnoses.size() == 1 &&
      (only->decision.action != DecisionAction::kNone || throughput.action == DecisionAction::kNone);
  if (!diagnosis_decides) {
    Decision merged = throughput;
    for (const auto& d : diagnoses) merged.notes.push_back(DiagnosisLine(d));
    return merged;
  }
  Decision decision = only->decision;
  decision.notes.push_back("from " + DiagnosisLine(*only));
  for (const auto& note : throughput.notes) decision.notes.push_back("throughput: " + note);
  return decision;
}

}  // namespace diagnose
