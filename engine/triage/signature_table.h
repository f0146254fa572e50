// The failure-signature table (rules/triage/failure-signatures.yaml): one entry per failure class
// with its line patterns, known-harmless patterns, priority, stage, optional log-only verdict and
// the TSDB questions to ask next; plus the thresholds triage uses. Loaded once, compiled into one
// multi-literal automaton so classifying a line costs one pass over its bytes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "engine/report/confidence.h"
#include "engine/report/decision_action.h"

namespace diagnose {

struct SignaturePattern {
  std::string literal;                 // substring that must occur (for a regex: its required literal)
  std::shared_ptr<const std::regex> regex;   // optional, checked only when `literal` occurs
  std::string regex_text;
};

struct LogOnlyVerdict {
  std::string root_cause;   // contract vocabulary
  DecisionAction action = DecisionAction::kNone;
  Confidence confidence = Confidence::kInsufficientEvidence;
};

// A line the class must recognise, as it appears in real logs; `diagnose lint` checks each against
// the whole table (its own class must read it; another class that also matches is named).
struct SignatureExample {
  std::string line;
  int yaml_line = 0;     // 1-based position in the table file
  int yaml_column = 0;
};

struct FailureSignature {
  std::string id;
  std::string stage;          // infrastructure | training | job
  int priority = 0;           // higher = more likely the root of a cascade
  std::string detector;       // non-empty for classes decided from facts, not lines (hang, ...)
  // false: the job survives the failure (e.g. Ray falls back to non-Ray mode), so the class can be
  // primary on a completed or running job; fatal classes there are reported, not primary.
  bool fatal = true;
  // A symptom other tasks print after one task fails (the coordinator declaring it dead, the
  // teardown's non-zero exits). It yields to an earlier error on a task it names as failed.
  bool cascade = false;
  std::string summary;        // one sentence for reports
  std::vector<SignaturePattern> patterns;
  std::vector<SignaturePattern> ignore;
  std::optional<LogOnlyVerdict> verdict;
  std::vector<std::string> tsdb_questions;
  std::vector<SignatureExample> examples;
};

struct SignatureTable {
  std::string source;                           // file the table came from
  std::vector<FailureSignature> classes;
  std::vector<SignaturePattern> harmless;       // lines never classified (formats §2.8)
  std::map<std::string, double> thresholds;     // name -> value

  const FailureSignature* Find(const std::string& id) const;
  // Threshold by name; kNotFound naming the file when the table lacks it.
  StatusOr<double> Threshold(const std::string& name) const;
};

// What `diagnose lint` says of the table's examples: an error where a class does not read its own
// example (a pattern that drifted from the message it was written for), a warning where a class of
// the same or a higher priority matches it too (it can take the line); lower-priority matches are
// the catch-alls under a specific cause and say nothing.
struct SignatureExampleFinding {
  std::string file;
  int line = 0;
  int column = 0;
  bool error = false;
  std::string message;
};
std::vector<SignatureExampleFinding> CheckSignatureExamples(const SignatureTable& table);

// Errors name file:line:col from the YAML parser, or the entry at fault.
StatusOr<SignatureTable> LoadSignatureTable(const std::string& path);
StatusOr<SignatureTable> ParseSignatureTable(const std::string& yaml_text, const std::string& source_name);

// Aho-Corasick over every literal of the table (patterns, ignores, harmless). Immutable after
// construction, so one matcher can serve several scanning threads.
class SignatureMatcher {
 public:
  // `triggers` are extra literals (at most 32) a caller wants reported in the same pass, bit i for
  // triggers[i], whether or not the line is harmless: one scan serves classification and extraction.
  explicit SignatureMatcher(const SignatureTable& table, std::vector<std::string> triggers = {});
  SignatureMatcher(const SignatureMatcher&) = delete;   // literals point into this object
  SignatureMatcher& operator=(const SignatureMatcher&) = delete;
  const std::vector<std::string>& triggers() const { return triggers_; }

  // Indices into table.classes whose pattern matched `line` and whose ignore list (and the global
  // harmless list) did not. `out` is cleared first. `trigger_bits` (optional) receives the triggers.
  void Match(std::string_view line, std::vector<int>* out, uint32_t* trigger_bits = nullptr) const;

 private:
  // The first position at or after `i` whose byte pair begins a literal; size - 1 or size when none.
  size_t NextLiteralStart(const unsigned char* bytes, size_t i, size_t size) const;

  struct Literal {
    int class_index;    // -1: global harmless, -2: trigger (bit in `ignore` slot unused)
    int trigger_bit;
    bool ignore;
    const SignaturePattern* pattern;
  };
  const SignatureTable* table_;
  std::vector<std::string> triggers_;
  SignaturePattern trigger_patterns_[32];
  std::vector<Literal> literals_;
  // Which byte pairs begin a literal (bit (a << 8 | b)). From the root state a position whose pair
  // begins no literal cannot start a match, so Match() skips such positions with one bit test each
  // instead of walking the automaton. Exact only when no literal is a single byte.
  uint64_t literal_start_pairs_[(1 << 16) / 64] = {};
  bool skip_from_root_ = true;
  uint8_t byte_class_[256] = {};
  int alphabet_ = 1;
  std::vector<int32_t> next_;          // state * alphabet_ + symbol
  std::vector<int32_t> output_head_;   // state -> first literal index in outputs_ chain, -1 none
  std::vector<std::pair<int32_t, int32_t>> outputs_;   // (literal, next in chain)
};

}  // namespace diagnose
