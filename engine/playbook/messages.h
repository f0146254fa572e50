// Every user-facing load/lint message of the playbook loader, in one place. Tests assert on the
// codes and these texts (Falco's rule_loading_messages.h; Prometheus's wording: lower case, the
// field named in quotes). `{}` placeholders are filled with fmt in order.
#pragma once

namespace diagnose::playbook {

enum class LoadCode {
  // Errors.
  kFileRead,            // the file cannot be read
  kYamlParse,           // not YAML
  kUnknownKey,          // typo'd or unsupported key
  kMissingField,        // required field absent
  kFieldType,           // field has the wrong YAML type
  kBadValue,            // value outside its vocabulary
  kDuplicateId,         // two rules/playbooks with one id
  kRuleKind,            // zero or several of query/fact/analysis/verdict
  kExprSyntax,          // condition language syntax error
  kTypeMismatch,        // statically known type mismatch in an expression
  kUnknownReference,    // rule, param, threshold, window or name that does not exist
  kCycle,               // dependency loop
  kTemplateParam,       // PromQL template placeholder/parameter problem
  kParamType,           // parameter value does not match its declared type
  kUnknownAnalysis,     // analysis name or arg not known
  kPromqlSyntax,        // Prometheus's own parser rejects the query (promtool check rules)
  kLimit,               // the file is past a named limit (yaml.file_bytes, yaml.depth, yaml.nodes)
  // Warnings.
  kUnusedRule,
  kUnusedArg,
  kUnknownMetric,       // a query's metric name is not in the metric catalogue (rules/metrics.yaml)
  kEmptyListSentence,   // a template renders a list that may be empty into a sentence
  kUnusedBinding,       // a rule's `let:` name that nothing of the rule reads
  kSignatureOverlap,    // a failure signature's pattern also matches another class's example line
};

// "unknown-key", ...: stable identifiers for --format json and tests.
const char* LoadCodeName(LoadCode code);
bool IsWarning(LoadCode code);

namespace msg {
inline constexpr const char* kFileRead = "cannot read file: {}";
inline constexpr const char* kYamlParse = "invalid YAML: {}";
inline constexpr const char* kUnknownKey = "unknown key '{}' (allowed: {})";
inline constexpr const char* kMissingField = "field '{}' must be set";
inline constexpr const char* kFieldType = "field '{}' must be {}";
inline constexpr const char* kBadValue = "field '{}': '{}' is not one of {}";
inline constexpr const char* kBindingHides = "field '{}': '{}' would hide {}; choose another name";
inline constexpr const char* kDuplicateId = "duplicate id '{}' (first defined at {})";
inline constexpr const char* kRuleKindNone = "rule needs exactly one of 'query', 'fact', 'analysis', 'verdict'";
inline constexpr const char* kRuleKindMany = "rule has both '{}' and '{}'; exactly one kind is allowed";
inline constexpr const char* kExprSyntax = "field '{}': could not parse expression: {}";
inline constexpr const char* kTypeMismatch = "field '{}': {}";
inline constexpr const char* kUnknownRule = "field '{}': unknown rule '{}'";
inline constexpr const char* kUnknownSharedRule = "field '{}': unknown shared rule 'common.{}'";
inline constexpr const char* kUnknownName = "field '{}': unknown name '{}'";
inline constexpr const char* kUnknownParam = "field '{}': unknown param '{}'";
inline constexpr const char* kUnknownThreshold = "field '{}': unknown threshold '{}'";
inline constexpr const char* kUnknownWindow = "field '{}': unknown window '{}'";
inline constexpr const char* kUnknownField = "field '{}': rule '{}' ({}) has no field '{}' (has: {})";
inline constexpr const char* kSharedUsesPlaybook = "field '{}': a shared rule cannot use '{}'";
inline constexpr const char* kCycle = "dependency cycle: {}";
inline constexpr const char* kTemplateUnknown = "field 'query': template placeholder '{{{{ {} }}}}' is not an arg or param";
inline constexpr const char* kTemplateUnterminated = "field 'query': unterminated '{{{{'";
inline constexpr const char* kParamType = "field '{}': value {} is not a valid {}";
inline constexpr const char* kParamUnknownType = "field '{}': unknown parameter type '{}' (allowed: {})";
inline constexpr const char* kRegexRuntime = "field '{}': a regex parameter must be a literal, not an expression";
inline constexpr const char* kUnknownAnalysis = "field 'analysis': unknown analysis '{}' (available: {})";
inline constexpr const char* kUnknownAnalysisArg = "field 'args': analysis '{}' has no arg '{}' (has: {})";
inline constexpr const char* kAnalysisArgType = "field 'args.{}': must be a {}";
inline constexpr const char* kAnalysisInput = "field '{}': analysis '{}' needs it";
inline constexpr const char* kPrecedenceNotVerdict = "field 'precedence': '{}' is not a verdict rule of this playbook";
inline constexpr const char* kUnusedRule = "rule '{}' is not used by any other rule and reports no finding";
inline constexpr const char* kUnusedArg = "arg '{}' is not used in the query template";
inline constexpr const char* kUnusedBinding = "let '{}' is not used by rule '{}' (a leftover, or a typo where it is read)";
inline constexpr const char* kUnknownMetric = "unknown metric '{}' (not in {}{})";
inline constexpr const char* kEmptyListSentence =
    "field '{}': '{{{{ {} }}}}' renders a {} that may be empty into the sentence; test it in {} (len(...) > 0), "
    "or write phrases(...) or if(len(...) > 0, ..., \"...\")";
}  // namespace msg

}  // namespace diagnose::playbook
