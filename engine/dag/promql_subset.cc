#include "engine/dag/promql_subset.h"
#include "engine/dag/promql_lexis.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace diagnose::dag {

namespace {
bool IsComparisonOperator(std::string_view op) {
  return op == "==" || op == "!=" || op == ">" || op == "<" || op == ">=" || op == "<=";
}
bool IsSetOperator(std::string_view op) { return op == "and" || op == "or" || op == "unless"; }
}  // namespace

bool PromqlNode::IsComparison() const { return kind == Kind::kBinary && IsComparisonOperator(op); }
bool PromqlNode::IsSetOperation() const { return kind == Kind::kBinary && IsSetOperator(op); }

// Named: in a unity build this file shares a translation unit with the other readers' helpers.
namespace subset {
namespace {

using Kind = PromqlNode::Kind;

// PromQL's binary precedence, loosest first; 0 for ^ and atan2, which are declined.
int Precedence(std::string_view op) {
  if (op == "or") return 1;
  if (op == "and" || op == "unless") return 2;
  if (IsComparisonOperator(op)) return 3;
  if (op == "+" || op == "-") return 4;
  if (op == "*" || op == "/" || op == "%") return 5;
  return 0;
}

bool IsAggregation(std::string_view word) {
  static const std::set<std::string_view> kWords = {"sum", "avg", "count", "min", "max", "group", "stddev", "stdvar",
                                                    "topk", "bottomk", "quantile", "count_values", "limitk", "limit_ratio"};
  return kWords.count(word) > 0;
}
bool IsEvaluatedAggregation(std::string_view word) {
  return word == "sum" || word == "max" || word == "min" || word == "count" || word == "group" || word == "quantile";
}

bool IsReservedWord(std::string_view word) {
  static const std::set<std::string_view> kWords = {"and", "or", "unless", "bool", "on", "ignoring", "group_left",
                                                    "group_right", "offset", "by", "without", "atan2", "inf", "nan"};
  std::string lower(word);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return kWords.count(lower) > 0;
}

// Recursive descent, precedence climbing for the binary operators. Any doubt ends the parse
// (`failed_`): the question is then asked as written.
class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  PromqlNodePtr Parse() {
    if (HasCommentOrOpenString()) return nullptr;
    PromqlNodePtr root = Expression(1);
    SkipSpaces();
    if (failed_ || !root || i_ != s_.size()) return nullptr;
    return root;
  }

 private:
  using NodePtr = PromqlNodePtr;

  NodePtr Fail() {
    failed_ = true;
    return nullptr;
  }

  void SkipSpaces() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }

  // The index just past the string literal opened at `open` (npos when unterminated).
  size_t PastString(size_t open) const {
    const size_t end = EndOfPromqlString(s_, open);
    return end < s_.size() ? end + 1 : std::string_view::npos;
  }

  bool HasCommentOrOpenString() const {
    for (size_t j = 0; j < s_.size(); ++j) {
      const char c = s_[j];
      if (c == '"' || c == '\'' || c == '`') {
        j = PastString(j);
        if (j == std::string_view::npos) return true;
        --j;
      } else if (c == '#') {
        return true;
      }
    }
    return false;
  }

  // The index just past the bracket closing the one at `open` (npos when unbalanced).
  size_t PastBracket(size_t open) const {
    const size_t close = ClosingPromqlBracket(s_, open);
    return close == std::string_view::npos ? close : close + 1;
  }

  std::string_view PeekWord() const {
    size_t j = i_;
    if (j >= s_.size() || !IsPromqlNameStart(s_[j])) return {};
    while (j < s_.size() && IsPromqlNameChar(s_[j])) ++j;
    return s_.substr(i_, j - i_);
  }

  bool Expect(char c) {
    SkipSpaces();
    if (i_ >= s_.size() || s_[i_] != c) return false;
    ++i_;
    return true;
  }

  // The binary operator at the cursor (not consumed), or "".
  std::string PeekOperator() const {
    if (i_ >= s_.size()) return "";
    const std::string_view rest = s_.substr(i_);
    for (std::string_view two : {"==", "!=", ">=", "<="})
      if (rest.substr(0, 2) == two) return std::string(two);
    const char c = rest.front();
    if (c == '>' || c == '<' || c == '+' || c == '-' || c == '*' || c == '/' || c == '%' || c == '^') return std::string(1, c);
    const std::string_view word = PeekWord();
    if (word == "and" || word == "or" || word == "unless" || word == "atan2") return std::string(word);
    return "";
  }

  // `(a, b)` at the cursor: label names (no colon), a trailing comma allowed as PromQL does.
  bool LabelList(std::vector<std::string>* names) {
    if (!Expect('(')) return false;
    while (true) {
      SkipSpaces();
      if (i_ < s_.size() && s_[i_] == ')') {
        ++i_;
        return true;
      }
      const std::string_view name = PeekWord();
      if (name.empty() || name.find(':') != std::string_view::npos) return false;
      names->emplace_back(name);
      i_ += name.size();
      SkipSpaces();
      if (i_ < s_.size() && s_[i_] == ',') ++i_;
      else if (i_ >= s_.size() || s_[i_] != ')') return false;
    }
  }

  NodePtr Expression(int min_precedence) {
    // Playbook text is untrusted: nesting deep enough to exhaust the stack is left to the TSDB.
    if (++depth_ > kMaxDepth) return Fail();
    NodePtr lhs = Unary();
    while (!failed_) {
      SkipSpaces();
      const std::string op = PeekOperator();
      if (op.empty()) break;
      const int precedence = Precedence(op);
      if (precedence == 0) return Fail();
      if (precedence < min_precedence) break;
      i_ += op.size();
      SkipSpaces();
      auto node = std::make_shared<PromqlNode>();
      node->kind = Kind::kBinary;
      node->op = op;
      if (PeekWord() == "bool") {
        if (!IsComparisonOperator(op)) return Fail();
        node->return_bool = true;
        i_ += 4;
        SkipSpaces();
      }
      const std::string_view modifier = PeekWord();
      // `on` only where it decides just which series match: with arithmetic or a comparison it
      // also decides the result's labels, which the evaluator does not reproduce.
      if (modifier == "on" && IsSetOperator(op)) {
        i_ += modifier.size();
        if (!LabelList(&node->labels)) return Fail();
        node->on = true;
        SkipSpaces();
        const std::string_view grouping = PeekWord();
        if (grouping == "group_left" || grouping == "group_right") return Fail();
      } else if (modifier == "on" || modifier == "ignoring" || modifier == "group_left" || modifier == "group_right") {
        return Fail();
      }
      NodePtr rhs = Expression(precedence + 1);
      if (failed_) return nullptr;
      const bool lhs_number = lhs->kind == Kind::kNumber;
      const bool rhs_number = rhs->kind == Kind::kNumber;
      if (lhs_number && rhs_number) return Fail();
      if ((lhs_number || rhs_number) && IsSetOperator(op)) return Fail();
      node->children = {std::move(lhs), std::move(rhs)};
      lhs = std::move(node);
    }
    --depth_;
    return failed_ ? nullptr : lhs;
  }

  NodePtr Unary() {
    SkipSpaces();
    if (i_ < s_.size() && (s_[i_] == '-' || s_[i_] == '+')) {
      const bool negative = s_[i_] == '-';
      ++i_;
      SkipSpaces();
      NodePtr operand = Primary();
      if (failed_ || operand->kind != Kind::kNumber) return Fail();
      SkipSpaces();
      if (i_ < s_.size() && s_[i_] == '^') return Fail();   // -2 ^ 2 is -(2 ^ 2)
      auto node = std::make_shared<PromqlNode>(*operand);
      if (negative) node->number = -node->number;
      return node;
    }
    return Primary();
  }

  // A subquery or a modifier after a group or a call the engine evaluates: not a vector it holds.
  bool ModifierFollows() {
    SkipSpaces();
    return i_ < s_.size() && (s_[i_] == '[' || s_[i_] == '@' || PeekWord() == "offset");
  }

  NodePtr Primary() {
    SkipSpaces();
    if (i_ >= s_.size()) return Fail();
    const char c = s_[i_];
    if (c == '(') {
      ++i_;
      NodePtr inner = Expression(1);
      if (failed_ || !Expect(')') || ModifierFollows()) return Fail();
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return Number();
    if (c == '{') return Part(i_);
    if (!IsPromqlNameStart(c)) return Fail();
    const std::string_view word = PeekWord();
    if (IsReservedWord(word)) return Fail();
    if (word == "quantile") return Quantile();
    if (IsEvaluatedAggregation(word)) return Aggregation(word);
    if (IsAggregation(word)) return AggregationAsPart(word);
    if (word == "label_replace") return LabelReplace();
    if (word == "scalar") return Scalar();
    return Part(i_);
  }

  NodePtr Number() {
    const size_t start = i_;
    while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.')) ++i_;
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    if (i_ < s_.size() && IsPromqlNameChar(s_[i_])) return Fail();   // 0x1f, 5m
    const std::string text(s_.substr(start, i_ - start));
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v)) return Fail();
    auto node = std::make_shared<PromqlNode>();
    node->kind = Kind::kNumber;
    node->number = v;
    return node;
  }

  // A selector or function call with its range and modifiers, asked of the TSDB as written.
  NodePtr Part(size_t start) {
    std::string_view function;
    if (s_[i_] != '{') {
      function = PeekWord();
      i_ += function.size();
      SkipSpaces();
    }
    bool call = false, modified = false;
    if (i_ < s_.size() && (s_[i_] == '{' || s_[i_] == '(')) {
      call = s_[i_] == '(';
      if ((i_ = PastBracket(i_)) == std::string_view::npos) return Fail();
      SkipSpaces();
      if (call && i_ < s_.size() && s_[i_] == '{') return Fail();
    }
    if (i_ < s_.size() && s_[i_] == '[') {
      modified = true;
      if ((i_ = PastBracket(i_)) == std::string_view::npos) return Fail();
      SkipSpaces();
    }
    while (i_ < s_.size()) {
      if (PeekWord() == "offset") {
        i_ += 6;
        SkipSpaces();
        if (i_ < s_.size() && s_[i_] == '-') ++i_;
        const size_t duration = i_;
        while (i_ < s_.size() && std::isalnum(static_cast<unsigned char>(s_[i_]))) ++i_;
        if (i_ == duration) return Fail();
      } else if (s_[i_] == '@') {
        ++i_;
        SkipSpaces();
        while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' || s_[i_] == '_')) ++i_;
        if (i_ < s_.size() && s_[i_] == '(') {
          if ((i_ = PastBracket(i_)) == std::string_view::npos) return Fail();
        }
      } else {
        break;
      }
      modified = true;
      SkipSpaces();
    }
    auto node = PartFromSpan(start, Kind::kPart);
    if (call && !modified) node->function = std::string(function);
    return node;
  }

  std::string SpanText(size_t start) const {
    std::string_view text = s_.substr(start, i_ - start);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
    return std::string(text);
  }

  std::shared_ptr<PromqlNode> PartFromSpan(size_t start, Kind kind) {
    auto node = std::make_shared<PromqlNode>();
    node->kind = kind;
    node->text = SpanText(start);
    return node;
  }

  // `by (a, b)` at the cursor, or nothing; false on `without`, a second `by` or a malformed list.
  bool Grouping(std::vector<std::string>* by, bool* seen) {
    SkipSpaces();
    const std::string_view word = PeekWord();
    if (word == "without") return false;
    if (word != "by") return true;
    if (*seen) return false;
    *seen = true;
    i_ += 2;
    return LabelList(by);
  }

  NodePtr Aggregation(std::string_view word) {
    const size_t start = i_;
    auto node = std::make_shared<PromqlNode>();
    node->kind = Kind::kAggregate;
    node->op = std::string(word);
    i_ += word.size();
    bool grouped = false;
    if (!Grouping(&node->labels, &grouped) || !Expect('(')) return Fail();
    if (word == "quantile") {
      NodePtr q = Unary();
      if (failed_ || q->kind != Kind::kNumber || !Expect(',')) return Fail();
      node->number = q->number;
    }
    NodePtr inner = Expression(1);
    if (failed_ || !Expect(')') || !Grouping(&node->labels, &grouped)) return Fail();
    if (inner->kind == Kind::kNumber) return Fail();
    node->children = {std::move(inner)};
    node->text = SpanText(start);
    return node;
  }

  // Evaluated with a number for q and `by`; otherwise (`without`, a computed q) asked as written.
  NodePtr Quantile() {
    const size_t start = i_;
    const int depth = depth_;
    if (NodePtr node = Aggregation("quantile")) return node;
    i_ = start;
    depth_ = depth;
    failed_ = false;
    return AggregationAsPart("quantile");
  }

  // Asked as written: its extent is the word, an optional grouping before or after, its arguments.
  NodePtr AggregationAsPart(std::string_view word) {
    const size_t start = i_;
    i_ += word.size();
    SkipSpaces();
    auto grouping = [&] {
      const std::string_view w = PeekWord();
      if (w != "by" && w != "without") return true;
      i_ += w.size();
      SkipSpaces();
      if (i_ >= s_.size() || s_[i_] != '(' || (i_ = PastBracket(i_)) == std::string_view::npos) return false;
      SkipSpaces();
      return true;
    };
    const size_t before = i_;
    if (!grouping()) return Fail();
    const bool grouped_before = i_ != before;
    if (i_ >= s_.size() || s_[i_] != '(' || (i_ = PastBracket(i_)) == std::string_view::npos) return Fail();
    SkipSpaces();
    if (!grouped_before && !grouping()) return Fail();
    return PartFromSpan(start, Kind::kPart);
  }

  NodePtr Scalar() {
    const size_t start = i_;
    i_ += std::string_view("scalar").size();
    if (!Expect('(')) return Fail();
    NodePtr inner = Expression(1);
    if (failed_ || inner->kind == Kind::kNumber || !Expect(')')) return Fail();
    auto node = PartFromSpan(start, Kind::kScalar);
    if (ModifierFollows()) return Fail();
    node->children = {std::move(inner)};
    return node;
  }

  // A string literal without escapes (its text is its value).
  std::optional<std::string> PlainString() {
    SkipSpaces();
    if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'' && s_[i_] != '`')) return std::nullopt;
    const size_t past = PastString(i_);
    if (past == std::string_view::npos) return std::nullopt;
    const std::string_view body = s_.substr(i_ + 1, past - i_ - 2);
    if (s_[i_] != '`' && body.find('\\') != std::string_view::npos) return std::nullopt;
    i_ = past;
    return std::string(body);
  }

  NodePtr LabelReplace() {
    i_ += std::string_view("label_replace").size();
    if (!Expect('(')) return Fail();
    NodePtr inner = Expression(1);
    if (failed_ || inner->kind == Kind::kNumber) return Fail();
    std::optional<std::string> args[4];
    for (auto& arg : args)
      if (!Expect(',') || !(arg = PlainString())) return Fail();
    if (!Expect(')')) return Fail();
    auto node = std::make_shared<PromqlNode>();
    node->kind = Kind::kLabelReplace;
    node->dst = *args[0];
    node->replacement = *args[1];
    node->src = *args[2];
    node->regex = *args[3];
    // Only a literal pattern and a replacement without $ references: RE2's full syntax is not
    // reproduced here.
    auto literal = [](const std::string& s) { return s.find_first_of("\\.+*?()|[]{}^$") == std::string::npos; };
    const bool valid_dst = !node->dst.empty() && !std::isdigit(static_cast<unsigned char>(node->dst[0])) &&
                           std::all_of(node->dst.begin(), node->dst.end(), [](char ch) {
                             return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
                           });
    if (!literal(node->regex) || node->replacement.find('$') != std::string::npos || !valid_dst) return Fail();
    node->children = {std::move(inner)};
    return node;
  }

  static constexpr int kMaxDepth = 64;
  std::string_view s_;
  size_t i_ = 0;
  int depth_ = 0;
  bool failed_ = false;
};

bool IsPart(const PromqlNode& node, SubsetRules rules) {
  return node.kind == Kind::kPart || (rules.scalar_is_part && node.kind == Kind::kScalar) ||
         (rules.aggregations_of_parts_are_parts && node.kind == Kind::kAggregate && node.children[0]->kind == Kind::kPart);
}

void CollectParts(const PromqlNode& node, SubsetRules rules, PromqlParts* out) {
  if (!IsPart(node, rules)) {
    for (const auto& child : node.children) CollectParts(*child, rules, out);
    return;
  }
  auto it = std::find(out->texts.begin(), out->texts.end(), node.text);
  if (it == out->texts.end()) {
    out->texts.push_back(node.text);
    out->reads.push_back(0);
    it = out->texts.end() - 1;
  }
  ++out->reads[it - out->texts.begin()];
}

// --- Evaluation at one instant ---

// A value of the evaluation: a number (a literal, or a scalar() evaluated) or a vector, its own or a
// part's answer read in place (a part read four times at 1,024 nodes is 8,192 elements copied four times).
struct Value {
  bool is_number = false;
  double number = 0;
  InstantVector vector;
  const InstantVector* part = nullptr;

  const InstantVector& Vector() const { return part ? *part : vector; }
};

void AppendLabel(std::string* key, const std::string& name, const std::string& value) {
  key->append(name).append(1, '\xff').append(value).append(1, '\xff');
}

// What vector matching compares: the `on` labels' values (absent or empty alike), or without `on`
// every label but the metric name. Hashed and compared in place: a signature string per element
// and operator was a fifth of the run's own CPU at 1,024 nodes.
size_t MixHash(size_t seed, const std::string& text) {
  return seed ^ (std::hash<std::string>{}(text) + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

size_t SignatureHash(const Labels& labels, const PromqlNode& binary) {
  size_t h = 0;
  if (!binary.on) {
    for (const auto& [name, value] : labels)
      if (name != "__name__") h = MixHash(MixHash(h, name), value);
    return h;
  }
  for (const auto& name : binary.labels)
    if (auto it = labels.find(name); it != labels.end() && !it->second.empty()) h = MixHash(MixHash(h, name), it->second);
  return h;
}

bool SameSignature(const Labels& a, const Labels& b, const PromqlNode& binary) {
  if (&a == &b) return true;
  if (!binary.on) {
    auto skip_name = [](const Labels& labels, Labels::const_iterator it) {
      return it != labels.end() && it->first == "__name__" ? std::next(it) : it;
    };
    auto i = skip_name(a, a.begin()), j = skip_name(b, b.begin());
    for (; i != a.end() && j != b.end(); i = skip_name(a, std::next(i)), j = skip_name(b, std::next(j)))
      if (*i != *j) return false;
    return i == a.end() && j == b.end();
  }
  for (const auto& name : binary.labels) {
    auto i = a.find(name), j = b.find(name);
    const std::string* va = i == a.end() || i->second.empty() ? nullptr : &i->second;
    const std::string* vb = j == b.end() || j->second.empty() ? nullptr : &j->second;
    if ((va == nullptr) != (vb == nullptr) || (va && *va != *vb)) return false;
  }
  return true;
}

// The elements of one side of a binary operation by their signature.
class SignatureIndex {
 public:
  SignatureIndex(const PromqlNode& binary, const InstantVector& side) : binary_(binary) {
    by_hash_.reserve(side.size());
    for (const auto& e : side) by_hash_.emplace(SignatureHash(*e.labels, binary), &e);
  }
  // The first element (in the side's order) with the signature of `labels`; nullptr when none has it.
  const VectorElement* Find(const Labels& labels) const { return Find(labels, SignatureHash(labels, binary_)); }
  // Whether two of the side's elements have one signature.
  bool HasASignatureTwice() const {
    for (const auto& [hash, e] : by_hash_)
      if (Find(*e->labels, hash) != e) return true;
    return false;
  }

 private:
  const VectorElement* Find(const Labels& labels, size_t hash) const {
    const VectorElement* first = nullptr;
    auto [begin, end] = by_hash_.equal_range(hash);
    for (auto it = begin; it != end; ++it)
      if (SameSignature(labels, *it->second->labels, binary_) && (!first || it->second < first)) first = it->second;
    return first;
  }

  const PromqlNode& binary_;
  std::unordered_multimap<size_t, const VectorElement*> by_hash_;
};

// Prometheus fails an evaluation step whose output holds one label set twice.
bool HasSameLabelSetTwice(const InstantVector& vector) {
  std::unordered_multimap<size_t, const Labels*> seen;
  seen.reserve(vector.size());
  for (const auto& e : vector) {
    size_t h = 0;
    for (const auto& [name, value] : *e.labels) h = MixHash(MixHash(h, name), value);
    auto [begin, end] = seen.equal_range(h);
    for (auto it = begin; it != end; ++it)
      if (it->second == e.labels.get() || *it->second == *e.labels) return true;
    seen.emplace(h, e.labels.get());
  }
  return false;
}

std::shared_ptr<const Labels> WithoutName(const std::shared_ptr<const Labels>& labels) {
  if (!labels->count("__name__")) return labels;
  auto copy = std::make_shared<Labels>(*labels);
  copy->erase("__name__");
  return copy;
}

bool NamesAMetric(const InstantVector& vector) {
  return std::any_of(vector.begin(), vector.end(), [](const VectorElement& e) { return e.labels->count("__name__") > 0; });
}

bool DropsName(const PromqlNode& node) {
  return node.return_bool || node.op == "+" || node.op == "-" || node.op == "*" || node.op == "/" || node.op == "%";
}

// vectorElemBinop: the value and whether the element is kept.
std::pair<double, bool> Apply(const std::string& op, double lhs, double rhs) {
  if (op == "+") return {lhs + rhs, true};
  if (op == "-") return {lhs - rhs, true};
  if (op == "*") return {lhs * rhs, true};
  if (op == "/") return {lhs / rhs, true};
  if (op == "%") return {std::fmod(lhs, rhs), true};
  return {lhs, ComparisonHolds(op, lhs, rhs)};
}

// VectorscalarBinop.
InstantVector VectorNumber(const PromqlNode& node, const InstantVector& vector, double number, bool number_on_left) {
  InstantVector out;
  const bool comparison = node.IsComparison();
  for (const auto& e : vector) {
    double lv = e.v, rv = number;
    if (number_on_left) std::swap(lv, rv);
    auto [value, keep] = Apply(node.op, lv, rv);
    if (comparison && number_on_left) value = rv;
    if (node.return_bool) {
      value = keep ? 1.0 : 0.0;
      keep = true;
    }
    if (!keep) continue;
    out.push_back({DropsName(node) ? WithoutName(e.labels) : e.labels, e.t, value});
  }
  return out;
}

// VectorBinop, one-to-one.
std::optional<InstantVector> VectorVector(const PromqlNode& node, const InstantVector& lhs, const InstantVector& rhs) {
  InstantVector out;
  if (lhs.empty() || rhs.empty()) return out;
  const SignatureIndex right(node, rhs);
  if (right.HasASignatureTwice()) return std::nullopt;   // many-to-many
  // The right side's signatures are distinct, so a signature matched twice is an element matched twice.
  std::unordered_set<const VectorElement*> matched;
  for (const auto& e : lhs) {
    const VectorElement* match = right.Find(*e.labels);
    if (!match) continue;
    auto [value, keep] = Apply(node.op, e.v, match->v);
    if (node.return_bool) value = keep ? 1.0 : 0.0;
    else if (!keep) continue;
    if (!matched.insert(match).second) return std::nullopt;   // many-to-one without group_left
    out.push_back({DropsName(node) ? WithoutName(e.labels) : e.labels, e.t, value});
  }
  return out;
}

// VectorAnd, VectorOr, VectorUnless.
InstantVector SetOperation(const PromqlNode& node, const InstantVector& lhs, const InstantVector& rhs) {
  if (lhs.empty() || rhs.empty()) {
    if (node.op == "or") return lhs.empty() ? rhs : lhs;
    return node.op == "and" ? InstantVector{} : lhs;
  }
  const SignatureIndex other(node, node.op == "or" ? lhs : rhs);
  InstantVector out;
  if (node.op == "or") {
    out = lhs;
    for (const auto& e : rhs)
      if (!other.Find(*e.labels)) out.push_back(e);
    return out;
  }
  const bool keep_matched = node.op == "and";
  for (const auto& e : lhs)
    if ((other.Find(*e.labels) != nullptr) == keep_matched) out.push_back(e);
  return out;
}

constexpr double kExactIntegerLimit = 9007199254740992.0;   // 2^53

// aggregation(): groups (the `by` labels a series has) in order of first appearance, each folded in
// series order.
std::optional<InstantVector> Aggregate(const PromqlNode& node, const InstantVector& input, SubsetRules rules) {
  struct Group {
    std::shared_ptr<const Labels> labels;
    double t = 0;
    double value = 0;
    int64_t count = 0;
    bool positive_zero = false, negative_zero = false;
    std::vector<double> values;   // quantile's
  };
  std::vector<Group> groups;
  std::unordered_map<std::string, size_t> index;
  std::string key;
  const std::string& op = node.op;
  for (const auto& e : input) {
    key.clear();
    for (const auto& name : node.labels)
      if (auto it = e.labels->find(name); it != e.labels->end() && !it->second.empty()) AppendLabel(&key, name, it->second);
    // Exact in any order only while every term and partial sum is an integer below 2^53.
    if (rules.any_order && op == "sum" && (e.v != std::floor(e.v) || std::fabs(e.v) > kExactIntegerLimit)) return std::nullopt;
    auto [it, fresh] = index.try_emplace(key, groups.size());
    if (fresh) {
      auto kept = std::make_shared<Labels>();
      for (const auto& name : node.labels)
        if (auto l = e.labels->find(name); l != e.labels->end() && !l->second.empty()) kept->emplace(name, l->second);
      groups.push_back({std::move(kept), e.t, op == "group" ? 1.0 : e.v, 0});
    }
    Group& g = groups[it->second];
    if (e.v == 0) (std::signbit(e.v) ? g.negative_zero : g.positive_zero) = true;
    if (op == "quantile") g.values.push_back(e.v);
    if (g.count++ == 0) continue;
    if (op == "sum") g.value += e.v;
    else if (op == "max" && (g.value < e.v || std::isnan(g.value))) g.value = e.v;
    else if (op == "min" && (g.value > e.v || std::isnan(g.value))) g.value = e.v;
    if (rules.any_order && op == "sum" && std::fabs(g.value) > kExactIntegerLimit) return std::nullopt;
  }
  InstantVector out;
  out.reserve(groups.size());
  for (auto& g : groups) {
    // Which zero a max or min keeps is the order the series come in.
    if (rules.any_order && (op == "max" || op == "min") && g.value == 0 && g.positive_zero && g.negative_zero)
      return std::nullopt;
    if (op == "quantile") {
      const std::optional<double> q = PrometheusQuantile(node.number, std::move(g.values));
      if (!q) return std::nullopt;
      g.value = *q;
    }
    out.push_back({std::move(g.labels), g.t, op == "count" ? static_cast<double>(g.count) : g.value});
  }
  return out;
}

InstantVector LabelReplace(const PromqlNode& node, const InstantVector& input) {
  InstantVector out;
  out.reserve(input.size());
  for (const auto& e : input) {
    auto src = e.labels->find(node.src);
    const std::string& value = src == e.labels->end() ? std::string() : src->second;
    if (value != node.regex) {
      out.push_back(e);
      continue;
    }
    auto labels = std::make_shared<Labels>(*e.labels);
    labels->erase(node.dst);
    if (!node.replacement.empty()) (*labels)[node.dst] = node.replacement;
    out.push_back({std::move(labels), e.t, e.v});
  }
  return out;
}

class Evaluation {
 public:
  Evaluation(const std::vector<std::string>& texts, const std::vector<InstantVector>& values, SubsetRules rules)
      : texts_(texts), values_(values), rules_(rules) {}

  std::optional<Value> Of(const PromqlNode& node) {
    Value out;
    if (IsPart(node, rules_)) {
      const auto it = std::find(texts_.begin(), texts_.end(), node.text);
      if (it == texts_.end() || static_cast<size_t>(it - texts_.begin()) >= values_.size()) return std::nullopt;
      out.part = &values_[it - texts_.begin()];
      return out;
    }
    switch (node.kind) {
      case Kind::kPart:
        return std::nullopt;
      case Kind::kNumber:
        out.is_number = true;
        out.number = node.number;
        return out;
      case Kind::kScalar: {
        // scalar(v): the value of v's only element, NaN where v has none or several.
        auto input = VectorOf(*node.children[0]);
        if (!input) return std::nullopt;
        out.is_number = true;
        out.number = input->Vector().size() == 1 ? input->Vector().front().v : std::nan("");
        return out;
      }
      case Kind::kAggregate: {
        auto input = VectorOf(*node.children[0]);
        auto aggregated = input ? Aggregate(node, input->Vector(), rules_) : std::nullopt;
        if (!aggregated) return std::nullopt;
        out.vector = std::move(*aggregated);
        return out;   // one group per label set by construction
      }
      case Kind::kLabelReplace: {
        auto input = VectorOf(*node.children[0]);
        if (!input) return std::nullopt;
        out.vector = LabelReplace(node, input->Vector());
        break;
      }
      case Kind::kBinary: {
        auto lhs = Of(*node.children[0]);
        auto rhs = lhs ? Of(*node.children[1]) : std::nullopt;
        if (!lhs || !rhs || (lhs->is_number && rhs->is_number)) return std::nullopt;
        if (node.IsSetOperation()) {
          if (lhs->is_number || rhs->is_number) return std::nullopt;
          out.vector = SetOperation(node, lhs->Vector(), rhs->Vector());
        } else if (lhs->is_number || rhs->is_number) {
          out.vector = rhs->is_number ? VectorNumber(node, lhs->Vector(), rhs->number, false)
                                      : VectorNumber(node, rhs->Vector(), lhs->number, true);
        } else {
          auto vector = VectorVector(node, lhs->Vector(), rhs->Vector());
          if (!vector) return std::nullopt;
          out.vector = std::move(*vector);
        }
        // Every value holds one element per label set (parts are Prometheus' answers): an operator
        // keeps its sides' label sets, or drops the metric name, which can make two alike.
        if (!DropsName(node) || !(NamesAMetric(lhs->Vector()) || NamesAMetric(rhs->Vector()))) return out;
        break;
      }
    }
    if (HasSameLabelSetTwice(out.vector)) return std::nullopt;
    return out;
  }

 private:
  std::optional<Value> VectorOf(const PromqlNode& node) {
    auto value = Of(node);
    if (!value || value->is_number) return std::nullopt;
    return value;
  }

  const std::vector<std::string>& texts_;
  const std::vector<InstantVector>& values_;
  SubsetRules rules_;
};

}  // namespace
}  // namespace subset

std::optional<double> PrometheusQuantile(double q, std::vector<double> values) {
  if (values.empty()) return std::nan("");
  if (q < 0) return -HUGE_VAL;
  if (q > 1) return HUGE_VAL;
  const auto nans = std::count_if(values.begin(), values.end(), [](double v) { return std::isnan(v); });
  const bool positive_zero = std::any_of(values.begin(), values.end(), [](double v) { return v == 0 && !std::signbit(v); });
  const bool negative_zero = std::any_of(values.begin(), values.end(), [](double v) { return v == 0 && std::signbit(v); });
  if (nans > 1 || (positive_zero && negative_zero)) return std::nullopt;
  // One NaN sorts first (Go's Less: a NaN is less than anything), the rest by value.
  std::sort(values.begin(), values.end(), [](double a, double b) { return (std::isnan(a) && !std::isnan(b)) || a < b; });
  const double n = static_cast<double>(values.size());
  const double rank = q * (n - 1);
  const double lower = std::max(0.0, std::floor(rank));
  const double upper = std::min(n - 1, lower + 1);
  const double weight = rank - std::floor(rank);
  // Two products and a sum, each rounded (Go on amd64 fuses none; nor does this build, no -mfma).
  return values[static_cast<size_t>(lower)] * (1 - weight) + values[static_cast<size_t>(upper)] * weight;
}

PromqlNodePtr ParsePromqlSubset(std::string_view promql) {
  if (promql.size() > 8192) return nullptr;   // untrusted text: longer questions stay with the TSDB
  return subset::Parser(promql).Parse();
}

PromqlParts PartsOf(const PromqlNode& node, SubsetRules rules) {
  PromqlParts out;
  subset::CollectParts(node, rules, &out);
  return out;
}

bool AnyNode(const PromqlNode& node, SubsetRules rules, const std::function<bool(const PromqlNode&)>& pred) {
  if (pred(node)) return true;
  if (subset::IsPart(node, rules)) return false;
  return std::any_of(node.children.begin(), node.children.end(),
                     [&](const PromqlNodePtr& child) { return AnyNode(*child, rules, pred); });
}

std::optional<InstantVector> EvaluateInstant(const PromqlNode& root, const std::vector<std::string>& part_texts,
                                             const std::vector<InstantVector>& part_values, SubsetRules rules) {
  auto value = subset::Evaluation(part_texts, part_values, rules).Of(root);
  if (!value || value->is_number) return std::nullopt;
  if (value->part) return *value->part;
  return std::move(value->vector);
}

std::optional<std::vector<Series>> EvaluateAtEachTime(const PromqlNode& root, const std::vector<std::string>& part_texts,
                                                      const std::vector<const QueryResult*>& part_answers,
                                                      SubsetRules rules) {
  std::vector<std::map<double, InstantVector>> parts(part_answers.size());
  std::set<double> times;
  for (size_t p = 0; p < part_answers.size(); ++p) {
    for (const auto& series : part_answers[p]->series) {
      // Not owned: the answers outlive this call.
      const std::shared_ptr<const Labels> labels(std::shared_ptr<const Labels>(), &series.labels);
      for (const auto& sample : series.samples) {
        parts[p][sample.t].push_back({labels, sample.t, sample.v});
        times.insert(sample.t);
      }
    }
  }
  std::map<Labels, std::vector<Sample>> series;
  // A result element labelled by a part's series (most are: a filter, a ratio of aggregations) finds
  // its series by address; the answers, and so the addresses, live through this call.
  std::unordered_map<const Labels*, std::vector<Sample>*> of_part_labels;
  std::unordered_set<const Labels*> part_labels;
  for (const QueryResult* answer : part_answers)
    for (const auto& s : answer->series) part_labels.insert(&s.labels);
  std::vector<InstantVector> at(parts.size());
  for (const double t : times) {
    for (size_t p = 0; p < parts.size(); ++p) {
      auto it = parts[p].find(t);
      at[p] = it == parts[p].end() ? InstantVector{} : std::move(it->second);
    }
    auto value = EvaluateInstant(root, part_texts, at, rules);
    if (!value) return std::nullopt;
    for (const auto& e : *value) {
      if (!part_labels.count(e.labels.get())) {
        series[*e.labels].push_back({t, e.v});
        continue;
      }
      auto [known, fresh] = of_part_labels.try_emplace(e.labels.get(), nullptr);
      if (fresh) known->second = &series[*e.labels];
      known->second->push_back({t, e.v});
    }
  }
  std::vector<Series> out;
  out.reserve(series.size());
  for (auto& [labels, samples] : series) out.push_back({labels, std::move(samples)});
  return out;
}

}  // namespace diagnose::dag
