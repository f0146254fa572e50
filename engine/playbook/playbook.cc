#include "engine/playbook/playbook.h"

#include "engine/playbook/messages.h"

namespace diagnose::playbook {

std::string SourcePos::ToString() const {
  if (line <= 0) return file;
  return file + ":" + std::to_string(line) + ":" + std::to_string(col);
}

const char* ParamTypeName(ParamType t) {
  switch (t) {
    case ParamType::kNumber: return "number";
    case ParamType::kDuration: return "duration";
    case ParamType::kString: return "string";
    case ParamType::kHosts: return "hosts";
    case ParamType::kStrings: return "strings";
    case ParamType::kRegex: return "regex";
    case ParamType::kBool: return "bool";
  }
  return "?";
}

std::optional<ParamType> ParseParamType(const std::string& name) {
  for (ParamType t : {ParamType::kNumber, ParamType::kDuration, ParamType::kString, ParamType::kHosts,
                      ParamType::kStrings, ParamType::kRegex, ParamType::kBool})
    if (name == ParamTypeName(t)) return t;
  return std::nullopt;
}

const char* RuleKindName(RuleKind k) {
  switch (k) {
    case RuleKind::kQuery: return "query";
    case RuleKind::kFact: return "fact";
    case RuleKind::kAnalysis: return "analysis";
    case RuleKind::kVerdict: return "verdict";
  }
  return "?";
}

const RuleSpec* PlaybookSpec::FindRule(const std::string& local_id) const {
  for (const auto& r : rules)
    if (r.id == local_id) return &r;
  return nullptr;
}

const PlaybookSpec* Library::FindPlaybook(const std::string& id) const {
  for (const auto& p : playbooks)
    if (p.id == id) return &p;
  return nullptr;
}

const RuleSpec* Library::FindCommonRule(const std::string& local_id) const {
  for (const auto& r : common_rules)
    if (r.id == local_id) return &r;
  return nullptr;
}

bool IsBuiltinWindow(const std::string& name) { return name == "job" || name == "baseline_job"; }

const WindowSpec* Library::FindSharedWindow(const std::string& name) const {
  for (const auto& w : shared_windows)
    if (w.name == name) return &w;
  return nullptr;
}

const char* LoadCodeName(LoadCode code) {
  switch (code) {
    case LoadCode::kFileRead: return "file-read";
    case LoadCode::kYamlParse: return "yaml-parse";
    case LoadCode::kUnknownKey: return "unknown-key";
    case LoadCode::kMissingField: return "missing-field";
    case LoadCode::kFieldType: return "field-type";
    case LoadCode::kBadValue: return "bad-value";
    case LoadCode::kDuplicateId: return "duplicate-id";
    case LoadCode::kRuleKind: return "rule-kind";
    case LoadCode::kExprSyntax: return "expr-syntax";
    case LoadCode::kTypeMismatch: return "type-mismatch";
    case LoadCode::kUnknownReference: return "unknown-reference";
    case LoadCode::kCycle: return "cycle";
    case LoadCode::kTemplateParam: return "template-param";
    case LoadCode::kParamType: return "param-type";
    case LoadCode::kUnknownAnalysis: return "unknown-analysis";
    case LoadCode::kUnusedRule: return "unused-rule";
    case LoadCode::kUnusedArg: return "unused-arg";
    case LoadCode::kUnusedBinding: return "unused-binding";
    case LoadCode::kSignatureOverlap: return "signature-overlap";
    case LoadCode::kUnknownMetric: return "unknown-metric";
    case LoadCode::kEmptyListSentence: return "empty-list-sentence";
    case LoadCode::kPromqlSyntax: return "promql-syntax";
    case LoadCode::kLimit: return "limit";
  }
  return "?";
}

bool IsWarning(LoadCode code) {
  return code == LoadCode::kUnusedRule || code == LoadCode::kUnusedArg || code == LoadCode::kUnknownMetric ||
         code == LoadCode::kEmptyListSentence || code == LoadCode::kUnusedBinding || code == LoadCode::kSignatureOverlap;
}

}  // namespace diagnose::playbook
