#include "engine/triage/signature_table.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <deque>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/core/bounded_regex.h"
#include "engine/core/bounded_yaml.h"
#include "engine/core/yaml_reader.h"
#include "engine/report/report.h"

namespace diagnose {

namespace {

StatusOr<SignaturePattern> ParsePattern(const YamlReader& r, const YAML::Node& n) {
  SignaturePattern p;
  if (n.IsScalar()) {
    p.literal = n.as<std::string>();
  } else if (n.IsMap()) {
    if (n["contains"]) {
      p.literal = n["contains"].as<std::string>();
    } else if (n["regex"]) {
      p.regex_text = n["regex"].as<std::string>();
      if (!n["requires"])
        return ParseError(r.Where(n) + ": regex pattern needs `requires:` (a literal it always contains)");
      p.literal = n["requires"].as<std::string>();
      try {
        p.regex = std::make_shared<const std::regex>(p.regex_text, std::regex::ECMAScript | std::regex::optimize);
      } catch (const std::regex_error& e) {
        return ParseError(r.Where(n["regex"]) + ": invalid regex: " + e.what());
      }
    } else {
      return ParseError(r.Where(n) + ": pattern needs `contains:` or `regex:`");
    }
  } else {
    return ParseError(r.Where(n) + ": pattern must be a string or a map");
  }
  if (p.literal.empty()) return ParseError(r.Where(n) + ": empty pattern");
  return p;
}

Status ParsePatternList(const YamlReader& r, const YAML::Node& list, std::vector<SignaturePattern>* out) {
  if (!list) return Status::Ok();
  if (!list.IsSequence()) return ParseError(r.Where(list) + ": expected a list of patterns");
  for (const auto& item : list) {
    ASSIGN_OR_RETURN(SignaturePattern p, ParsePattern(r, item));
    out->push_back(std::move(p));
  }
  return Status::Ok();
}

Status ParseThresholds(const YamlReader& r, const YAML::Node& th, SignatureTable& table) {
  if (!th.IsMap()) return ParseError(r.Where(th) + ": thresholds must be a map");
  for (const auto& kv : th) table.thresholds[kv.first.as<std::string>()] = kv.second.as<double>();
  return Status::Ok();
}

StatusOr<FailureSignature> ParseClass(const YamlReader& r, const YAML::Node& c) {
  FailureSignature sig;
  if (!c["id"]) return ParseError(r.Where(c) + ": class without `id`");
  sig.id = c["id"].as<std::string>();
  sig.stage = c["stage"] ? c["stage"].as<std::string>() : "";
  if (sig.stage != "infrastructure" && sig.stage != "training" && sig.stage != "job")
    return ParseError(r.Where(c) + ": class " + sig.id + ": stage must be infrastructure|training|job");
  if (!c["priority"]) return ParseError(r.Where(c) + ": class " + sig.id + " has no priority");
  sig.priority = c["priority"].as<int>();
  if (c["detector"]) sig.detector = c["detector"].as<std::string>();
  if (c["fatal"]) sig.fatal = c["fatal"].as<bool>();
  if (c["cascade"]) sig.cascade = c["cascade"].as<bool>();
  if (c["summary"]) sig.summary = c["summary"].as<std::string>();
  RETURN_IF_ERROR(ParsePatternList(r, c["patterns"], &sig.patterns));
  RETURN_IF_ERROR(ParsePatternList(r, c["ignore"], &sig.ignore));
  if (sig.patterns.empty() && sig.detector.empty())
    return ParseError(r.Where(c) + ": class " + sig.id + " has neither patterns nor a detector");
  if (const YAML::Node v = c["verdict"]) {
    LogOnlyVerdict lv;
    lv.root_cause = v["root_cause"] ? v["root_cause"].as<std::string>() : "";
    const std::string action = v["action"] ? v["action"].as<std::string>() : "";
    const std::string confidence = v["confidence"] ? v["confidence"].as<std::string>() : "";
    if (!IsKnownRootCause(lv.root_cause))
      return ParseError(r.Where(v) + ": class " + sig.id + ": unknown root_cause '" + lv.root_cause + "'");
    const std::optional<DecisionAction> parsed_action = ParseDecisionAction(action);
    if (!parsed_action)
      return ParseError(r.Where(v) + ": class " + sig.id + ": unknown action '" + action + "'");
    lv.action = *parsed_action;
    const std::optional<Confidence> parsed_confidence = ParseConfidence(confidence);
    if (!parsed_confidence)
      return ParseError(r.Where(v) + ": class " + sig.id + ": unknown confidence '" + confidence + "'");
    lv.confidence = *parsed_confidence;
    sig.verdict = lv;
  }
  if (const YAML::Node q = c["tsdb_questions"]) {
    for (const auto& item : q) sig.tsdb_questions.push_back(item.as<std::string>());
  }
  if (const YAML::Node examples = c["examples"]) {
    if (!examples.IsSequence()) return ParseError(r.Where(examples) + ": class " + sig.id + ": examples must be a list of lines");
    for (const auto& item : examples) {
      if (!item.IsScalar()) return ParseError(r.Where(item) + ": class " + sig.id + ": an example is one log line");
      sig.examples.push_back({item.as<std::string>(), item.Mark().line + 1, item.Mark().column + 1});
    }
  }
  return sig;
}

}  // namespace

const FailureSignature* SignatureTable::Find(const std::string& id) const {
  for (const auto& c : classes)
    if (c.id == id) return &c;
  return nullptr;
}

StatusOr<double> SignatureTable::Threshold(const std::string& name) const {
  auto it = thresholds.find(name);
  if (it == thresholds.end()) return NotFoundError(source + ": thresholds." + name + " is missing");
  return it->second;
}

StatusOr<SignatureTable> ParseSignatureTable(const std::string& yaml_text, const std::string& source) {
  ASSIGN_OR_RETURN(YAML::Node root, LoadBoundedYaml(yaml_text, source));
  SignatureTable table;
  table.source = source;
  if (!root.IsMap()) return ParseError(source + ": top level must be a map");
  const YAML::Node classes = root["classes"];
  if (!classes || !classes.IsSequence()) return ParseError(source + ": `classes:` list is missing");
  // The harmless list, the thresholds and each class are parts of their own: a mistake in one still
  // lets the others be read, so the error names every mistake of the file.
  YamlReader r(source);
  r.Part([&] { return ParsePatternList(r, root["harmless"], &table.harmless); });
  if (const YAML::Node th = root["thresholds"]) r.Part([&] { return ParseThresholds(r, th, table); });
  std::set<std::string> ids;
  r.Each(classes, YAML::NodeType::Sequence, "`classes:` must be a list", [&](const YAML::Node& c) -> Status {
    ASSIGN_OR_RETURN(FailureSignature sig, ParseClass(r, c));
    if (!ids.insert(sig.id).second) return ParseError(r.Where(c["id"]) + ": duplicate class id " + sig.id);
    table.classes.push_back(std::move(sig));
    return Status::Ok();
  });
  RETURN_IF_ERROR(r.Finish(StatusCode::kParse));
  return table;
}

StatusOr<SignatureTable> LoadSignatureTable(const std::string& path) {
  auto text = ReadYamlFile(path);
  if (!text.ok()) return text.status().WithContext("signature table");
  return ParseSignatureTable(*text, path);
}

SignatureMatcher::SignatureMatcher(const SignatureTable& table, std::vector<std::string> triggers)
    : table_(&table), triggers_(std::move(triggers)) {
  if (triggers_.size() > 32) triggers_.resize(32);
  for (size_t i = 0; i < triggers_.size(); ++i) {
    trigger_patterns_[i].literal = triggers_[i];
    if (!triggers_[i].empty()) literals_.push_back({-2, static_cast<int>(i), false, &trigger_patterns_[i]});
  }
  for (const auto& p : table.harmless) literals_.push_back({-1, 0, true, &p});
  for (size_t ci = 0; ci < table.classes.size(); ++ci) {
    for (const auto& p : table.classes[ci].patterns) literals_.push_back({static_cast<int>(ci), 0, false, &p});
    for (const auto& p : table.classes[ci].ignore) literals_.push_back({static_cast<int>(ci), 0, true, &p});
  }
  for (const auto& l : literals_) {
    const std::string& text = l.pattern->literal;
    if (text.size() < 2) {
      skip_from_root_ = false;
      continue;
    }
    unsigned pair = static_cast<unsigned char>(text[0]) << 8 | static_cast<unsigned char>(text[1]);
    literal_start_pairs_[pair >> 6] |= uint64_t{1} << (pair & 63);
  }
  // Reduced alphabet: bytes that occur in some literal get their own symbol, all others share 0.
  for (const auto& l : literals_)
    for (unsigned char c : l.pattern->literal)
      if (byte_class_[c] == 0) byte_class_[c] = static_cast<uint8_t>(alphabet_++);
  // Build the trie.
  next_.assign(alphabet_, -1);
  output_head_.assign(1, -1);
  for (size_t li = 0; li < literals_.size(); ++li) {
    int s = 0;
    for (unsigned char c : literals_[li].pattern->literal) {
      int sym = byte_class_[c];
      if (next_[s * alphabet_ + sym] < 0) {
        next_[s * alphabet_ + sym] = static_cast<int32_t>(output_head_.size());
        next_.resize(next_.size() + alphabet_, -1);
        output_head_.push_back(-1);
      }
      s = next_[s * alphabet_ + sym];
    }
    outputs_.push_back({static_cast<int32_t>(li), output_head_[s]});
    output_head_[s] = static_cast<int32_t>(outputs_.size() - 1);
  }
  // BFS: failure links folded into a full transition table; outputs chained through failures.
  std::vector<int32_t> fail(output_head_.size(), 0);
  std::deque<int> queue;
  for (int sym = 0; sym < alphabet_; ++sym) {
    int t = next_[sym];
    if (t < 0) {
      next_[sym] = 0;
    } else {
      fail[t] = 0;
      queue.push_back(t);
    }
  }
  while (!queue.empty()) {
    int s = queue.front();
    queue.pop_front();
    // Append the failure state's outputs to this state's chain (copying the chain heads).
    int f = fail[s];
    for (int o = output_head_[f]; o >= 0; o = outputs_[o].second) {
      outputs_.push_back({outputs_[o].first, output_head_[s]});
      output_head_[s] = static_cast<int32_t>(outputs_.size() - 1);
    }
    for (int sym = 0; sym < alphabet_; ++sym) {
      int t = next_[s * alphabet_ + sym];
      if (t < 0) {
        next_[s * alphabet_ + sym] = next_[f * alphabet_ + sym];
      } else {
        fail[t] = next_[f * alphabet_ + sym];
        queue.push_back(t);
      }
    }
  }
  // Store row offsets (state * alphabet) so the hot loop needs no multiply.
  for (auto& v : next_) v = ((v * alphabet_) << 1) | (output_head_[v] >= 0 ? 1 : 0);
}

size_t SignatureMatcher::NextLiteralStart(const unsigned char* bytes, size_t i, size_t size) const {
  auto begins_literal = [this, bytes](size_t at) -> uint64_t {
    unsigned pair = bytes[at] << 8 | bytes[at + 1];
    return literal_start_pairs_[pair >> 6] >> (pair & 63) & 1;
  };
  // Four positions per branch: most positions begin nothing, and the tests do not depend on each other.
  for (; i + 4 < size; i += 4)
    if (begins_literal(i) | begins_literal(i + 1) | begins_literal(i + 2) | begins_literal(i + 3)) break;
  for (; i + 1 < size; ++i)
    if (begins_literal(i)) return i;
  return i;
}

void SignatureMatcher::Match(std::string_view line, std::vector<int>* out, uint32_t* trigger_bits) const {
  out->clear();
  uint32_t triggers = 0;
  // Small fixed sets: a line rarely hits more than a few literals.
  int hits[32];
  size_t hit_ends[32];   // where each hit's literal ends: its regex reads a window around it
  int n_hits = 0;
  int s = 0;
  const int32_t* next = next_.data();
  const int alpha = alphabet_;
  const auto* bytes = reinterpret_cast<const unsigned char*>(line.data());
  const size_t size = line.size();
  size_t i = 0;
  while (i < size) {
    if (s == 0 && skip_from_root_) {
      // At the root, a byte whose pair with the next byte begins no literal leads (after that next
      // byte) to the same state as starting afresh there, and emits nothing: skip it.
      i = NextLiteralStart(bytes, i, size);
      if (i + 1 >= size) break;   // a last byte alone cannot complete a literal of 2+ bytes
    }
    // Transitions hold (row offset << 1 | has_output): one table load per byte. The walk stays in
    // this small loop until a literal ends or it is back at the root, so its state stays in a register.
    int32_t v;
    do {
      v = next[s + byte_class_[bytes[i++]]];
      s = v >> 1;
    } while (!(v & 1) && s != 0 && i < size);
    if (v & 1) {
      for (int o = output_head_[s / alpha]; o >= 0; o = outputs_[o].second) {
        const Literal& l = literals_[outputs_[o].first];
        if (l.class_index == -2) triggers |= 1u << l.trigger_bit;
        else if (n_hits < 32) hit_ends[n_hits] = i, hits[n_hits++] = outputs_[o].first;
      }
    }
  }
  if (trigger_bits) *trigger_bits = triggers;
  if (n_hits == 0) return;
  std::vector<int> ignored;
  for (int i = 0; i < n_hits; ++i) {
    const Literal& l = literals_[hits[i]];
    if (l.pattern->regex &&
        !BoundedRegexSearch(line, *l.pattern->regex, hit_ends[i] - l.pattern->literal.size(), hit_ends[i]))
      continue;
    if (l.class_index < 0) {
      out->clear();
      return;   // known-harmless line
    }
    if (l.ignore) {
      ignored.push_back(l.class_index);
    } else if (std::find(out->begin(), out->end(), l.class_index) == out->end()) {
      out->push_back(l.class_index);
    }
  }
  if (!ignored.empty())
    out->erase(std::remove_if(out->begin(), out->end(),
                              [&](int c) { return std::find(ignored.begin(), ignored.end(), c) != ignored.end(); }),
               out->end());
}

std::vector<SignatureExampleFinding> CheckSignatureExamples(const SignatureTable& table) {
  std::vector<SignatureExampleFinding> findings;
  const SignatureMatcher matcher(table);
  std::vector<int> matched;
  for (const auto& owner : table.classes) {
    for (const auto& example : owner.examples) {
      matcher.Match(example.line, &matched);
      auto finding = [&](bool error, std::string message) {
        findings.push_back({table.source, example.yaml_line, example.yaml_column, error, std::move(message)});
      };
      const bool own = std::any_of(matched.begin(), matched.end(),
                                   [&](int i) { return table.classes[static_cast<size_t>(i)].id == owner.id; });
      if (!own) finding(true, "class " + owner.id + " does not read its own example (no pattern matches, or an ignore or harmless entry drops it)");
      for (int i : matched) {
        const FailureSignature& other = table.classes[static_cast<size_t>(i)];
        if (other.id == owner.id) continue;
        // A lower-priority class that also matches is the table working as designed (a generic
        // catch-all under a specific cause); one that ties or outranks can take the line.
        if (other.priority < owner.priority) continue;
        finding(false, "class " + other.id + " (priority " + std::to_string(other.priority) + ") also matches this example of " +
                           owner.id + " (priority " + std::to_string(owner.priority) + ")" +
                           (other.priority > owner.priority ? " and outranks it: a log holding this line is read as " + other.id
                                                            : " at the same priority: the earlier line decides"));
      }
    }
  }
  return findings;
}

}  // namespace diagnose
