#include "engine/dag/composite_answer.h"
#include "engine/dag/promql_lexis.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace diagnose::dag {

struct CompositeNode {
  enum class Kind { kPart, kNumber, kBinary, kAggregate, kLabelReplace };
  Kind kind = Kind::kPart;
  int part = -1;                 // kPart: index into CompositeQuestion::parts
  double number = 0;             // kNumber
  std::string op;                // kBinary: + - * / % == != > < >= <= and or unless; kAggregate: sum max min count group
  bool return_bool = false;      // kBinary comparison with `bool`
  std::vector<std::string> by;   // kAggregate: the grouping labels (none: one group)
  std::string dst, replacement, src, regex;   // kLabelReplace
  std::vector<std::shared_ptr<const CompositeNode>> children;
};

// Named: in a unity build this file shares a translation unit with derived_answer.cc's helpers.
namespace compose {
namespace {

using NodePtr = std::shared_ptr<const CompositeNode>;

bool IsComparison(const std::string& op) {
  return op == "==" || op == "!=" || op == ">" || op == "<" || op == ">=" || op == "<=";
}
bool IsSetOperator(const std::string& op) { return op == "and" || op == "or" || op == "unless"; }

// PromQL's binary precedence, loosest first; `^` and atan2 are not evaluated here (Go's Pow and
// Atan2 are not the C library's, bit for bit).
int Precedence(const std::string& op) {
  if (op == "or") return 1;
  if (op == "and" || op == "unless") return 2;
  if (IsComparison(op)) return 3;
  if (op == "+" || op == "-") return 4;
  if (op == "*" || op == "/" || op == "%") return 5;
  return 0;
}

bool IsAggregation(std::string_view word) {
  static const std::set<std::string_view> kWords = {"sum", "avg", "count", "min", "max", "group", "stddev", "stdvar",
                                                    "topk", "bottomk", "quantile", "count_values", "limitk", "limit_ratio"};
  return kWords.count(word) > 0;
}

bool IsReservedWord(std::string_view word) {
  static const std::set<std::string_view> kWords = {"and", "or", "unless", "bool", "on", "ignoring", "group_left",
                                                    "group_right", "offset", "by", "without", "atan2", "inf", "nan"};
  std::string lower(word);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return kWords.count(lower) > 0;
}

// Recursive descent over the subset above. Any doubt ends the parse (`failed_`): the question is then
// asked as written.
class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  std::optional<CompositeQuestion> Parse() {
    if (HasComment()) return std::nullopt;
    NodePtr root = Expression(1);
    SkipSpaces();
    if (failed_ || !root || i_ != s_.size()) return std::nullopt;
    if (root->kind == CompositeNode::Kind::kPart || root->kind == CompositeNode::Kind::kNumber) return std::nullopt;
    CompositeQuestion q;
    q.root = std::move(root);
    q.parts = std::move(parts_);
    q.part_occurrences = occurrences_;
    return q;
  }

 private:
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

  bool HasComment() const {
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
    int depth = 0;
    for (size_t j = open; j < s_.size(); ++j) {
      const char c = s_[j];
      if (c == '"' || c == '\'' || c == '`') {
        j = PastString(j);
        if (j == std::string_view::npos) return j;
        --j;
      } else if (c == '(' || c == '[' || c == '{') {
        ++depth;
      } else if ((c == ')' || c == ']' || c == '}') && --depth == 0) {
        return j + 1;
      }
    }
    return std::string_view::npos;
  }

  std::string_view PeekWord() const {
    size_t j = i_;
    if (j >= s_.size() || !IsPromqlNameStart(s_[j])) return {};
    while (j < s_.size() && IsPromqlNameChar(s_[j])) ++j;
    return s_.substr(i_, j - i_);
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

  NodePtr Expression(int min_precedence) {
    // Playbook text is untrusted: nesting deep enough to exhaust the stack is left to the TSDB.
    if (++depth_ > kMaxDepth) return Fail();
    NodePtr lhs = Unary();
    while (!failed_) {
      SkipSpaces();
      const std::string op = PeekOperator();
      if (op.empty()) break;
      const int precedence = Precedence(op);
      if (precedence == 0) return Fail();   // ^, atan2
      if (precedence < min_precedence) break;
      i_ += op.size();
      SkipSpaces();
      auto node = std::make_shared<CompositeNode>();
      node->kind = CompositeNode::Kind::kBinary;
      node->op = op;
      const std::string_view word = PeekWord();
      if (word == "bool") {
        if (!IsComparison(op)) return Fail();
        node->return_bool = true;
        i_ += word.size();
      } else if (word == "on" || word == "ignoring" || word == "group_left" || word == "group_right") {
        return Fail();
      }
      NodePtr rhs = Expression(precedence + 1);
      if (failed_) return nullptr;
      const bool lhs_number = lhs->kind == CompositeNode::Kind::kNumber;
      const bool rhs_number = rhs->kind == CompositeNode::Kind::kNumber;
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
      if (failed_ || operand->kind != CompositeNode::Kind::kNumber) return Fail();
      SkipSpaces();
      if (i_ < s_.size() && s_[i_] == '^') return Fail();   // -2 ^ 2 is -(2 ^ 2)
      auto node = std::make_shared<CompositeNode>(*operand);
      if (negative) node->number = -node->number;
      return node;
    }
    return Primary();
  }

  NodePtr Primary() {
    SkipSpaces();
    if (i_ >= s_.size()) return Fail();
    const char c = s_[i_];
    if (c == '(') {
      ++i_;
      NodePtr inner = Expression(1);
      SkipSpaces();
      if (failed_ || i_ >= s_.size() || s_[i_] != ')') return Fail();
      ++i_;
      SkipSpaces();
      // A subquery or a modifier on the group: the group is not a vector the engine holds.
      if (i_ < s_.size() && (s_[i_] == '[' || s_[i_] == '@' || PeekWord() == "offset")) return Fail();
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return Number();
    if (c == '{') return Part(i_);
    if (!IsPromqlNameStart(c)) return Fail();
    const std::string_view word = PeekWord();
    if (IsReservedWord(word)) return Fail();
    if (IsAggregation(word)) return Aggregation(word);
    if (word == "label_replace") return LabelReplace();
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
    auto node = std::make_shared<CompositeNode>();
    node->kind = CompositeNode::Kind::kNumber;
    node->number = v;
    return node;
  }

  // A selector or function call with its range and modifiers, asked of the TSDB as written.
  NodePtr Part(size_t start) {
    if (s_[i_] != '{') {
      i_ += PeekWord().size();
      SkipSpaces();
    }
    if (i_ < s_.size() && (s_[i_] == '{' || s_[i_] == '(')) {
      const bool call = s_[i_] == '(';
      if ((i_ = PastBracket(i_)) == std::string_view::npos) return Fail();
      SkipSpaces();
      if (call && i_ < s_.size() && s_[i_] == '{') return Fail();
    }
    if (i_ < s_.size() && s_[i_] == '[') {
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
      SkipSpaces();
    }
    return PartFromSpan(start);
  }

  // `by (a, b)` at the cursor, or nothing; false on `without` or a malformed list.
  bool Grouping(std::vector<std::string>* by, bool* seen) {
    SkipSpaces();
    const std::string_view word = PeekWord();
    if (word == "without") return false;
    if (word != "by") return true;
    if (*seen) return false;
    *seen = true;
    i_ += 2;
    SkipSpaces();
    if (i_ >= s_.size() || s_[i_] != '(') return false;
    ++i_;
    while (true) {
      SkipSpaces();
      if (i_ < s_.size() && s_[i_] == ')') {
        ++i_;
        return true;
      }
      const std::string_view name = PeekWord();
      if (name.empty() || name.find(':') != std::string_view::npos) return false;
      by->emplace_back(name);
      i_ += name.size();
      SkipSpaces();
      if (i_ < s_.size() && s_[i_] == ',') ++i_;
      else if (i_ >= s_.size() || s_[i_] != ')') return false;
    }
  }

  NodePtr Aggregation(std::string_view word) {
    const size_t start = i_;
    if (word != "sum" && word != "max" && word != "min" && word != "count" && word != "group") {
      // Asked as written: its extent is the word, an optional grouping before or after, its arguments.
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
      return PartFromSpan(start);
    }
    auto node = std::make_shared<CompositeNode>();
    node->kind = CompositeNode::Kind::kAggregate;
    node->op = std::string(word);
    i_ += word.size();
    bool grouped = false;
    if (!Grouping(&node->by, &grouped)) return Fail();
    SkipSpaces();
    if (i_ >= s_.size() || s_[i_] != '(') return Fail();
    ++i_;
    NodePtr inner = Expression(1);
    SkipSpaces();
    if (failed_ || i_ >= s_.size() || s_[i_] != ')') return Fail();
    ++i_;
    if (!Grouping(&node->by, &grouped)) return Fail();
    if (inner->kind == CompositeNode::Kind::kNumber) return Fail();
    node->children = {std::move(inner)};
    return node;
  }

  NodePtr PartFromSpan(size_t start) {
    std::string_view text = s_.substr(start, i_ - start);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
    auto node = std::make_shared<CompositeNode>();
    node->kind = CompositeNode::Kind::kPart;
    auto it = std::find(parts_.begin(), parts_.end(), text);
    node->part = static_cast<int>(it - parts_.begin());
    if (it == parts_.end()) parts_.emplace_back(text);
    ++occurrences_;
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

  bool Expect(char c) {
    SkipSpaces();
    if (i_ >= s_.size() || s_[i_] != c) return false;
    ++i_;
    return true;
  }

  NodePtr LabelReplace() {
    i_ += std::string_view("label_replace").size();
    if (!Expect('(')) return Fail();
    NodePtr inner = Expression(1);
    if (failed_ || inner->kind == CompositeNode::Kind::kNumber) return Fail();
    std::optional<std::string> args[4];
    for (auto& arg : args)
      if (!Expect(',') || !(arg = PlainString())) return Fail();
    if (!Expect(')')) return Fail();
    auto node = std::make_shared<CompositeNode>();
    node->kind = CompositeNode::Kind::kLabelReplace;
    node->dst = *args[0];
    node->replacement = *args[1];
    node->src = *args[2];
    node->regex = *args[3];
    // Only a literal pattern and a replacement without $ references: RE2's full syntax is not
    // reproduced here.
    auto literal = [](const std::string& s) {
      return s.find_first_of("\\.+*?()|[]{}^$") == std::string::npos;
    };
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
  std::vector<std::string> parts_;
  int occurrences_ = 0;
};

// One element of an instant vector. Labels are shared between the steps that do not change them.
struct Element {
  std::shared_ptr<const Labels> labels;
  double t = 0;
  double v = 0;
};
using Vector = std::vector<Element>;

// A value of the evaluation: a number (a literal) or a vector.
struct Value {
  bool is_number = false;
  double number = 0;
  Vector vector;
};

// The label set without __name__, as one string: what one-to-one and set operations match on.
std::string Signature(const Labels& labels) {
  std::string out;
  for (const auto& [name, value] : labels) {
    if (name == "__name__") continue;
    out += name;
    out += '\xff';
    out += value;
    out += '\xff';
  }
  return out;
}

std::string FullKey(const Labels& labels) {
  std::string out;
  for (const auto& [name, value] : labels) {
    out += name;
    out += '\xff';
    out += value;
    out += '\xff';
  }
  return out;
}

// Prometheus fails an evaluation step whose output holds one label set twice.
bool HasSameLabelSetTwice(const Vector& vector) {
  std::unordered_set<std::string> seen;
  seen.reserve(vector.size());
  for (const auto& e : vector)
    if (!seen.insert(FullKey(*e.labels)).second) return true;
  return false;
}

std::shared_ptr<const Labels> WithoutName(const std::shared_ptr<const Labels>& labels) {
  if (!labels->count("__name__")) return labels;
  auto copy = std::make_shared<Labels>(*labels);
  copy->erase("__name__");
  return copy;
}

bool DropsName(const std::string& op) { return op == "+" || op == "-" || op == "*" || op == "/" || op == "%"; }

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
Vector VectorNumber(const CompositeNode& node, const Vector& vector, double number, bool number_on_left) {
  Vector out;
  const bool comparison = IsComparison(node.op);
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
    out.push_back({DropsName(node.op) || node.return_bool ? WithoutName(e.labels) : e.labels, e.t, value});
  }
  return out;
}

// VectorBinop, one-to-one on every label but __name__.
std::optional<Vector> VectorVector(const CompositeNode& node, const Vector& lhs, const Vector& rhs) {
  Vector out;
  if (lhs.empty() || rhs.empty()) return out;
  std::unordered_map<std::string, const Element*> right;
  right.reserve(rhs.size());
  for (const auto& e : rhs)
    if (!right.emplace(Signature(*e.labels), &e).second) return std::nullopt;   // many-to-many
  std::unordered_set<std::string> matched;
  for (const auto& e : lhs) {
    std::string signature = Signature(*e.labels);
    auto it = right.find(signature);
    if (it == right.end()) continue;
    auto [value, keep] = Apply(node.op, e.v, it->second->v);
    if (node.return_bool) value = keep ? 1.0 : 0.0;
    else if (!keep) continue;
    if (!matched.insert(std::move(signature)).second) return std::nullopt;   // many-to-one without group_left
    out.push_back({DropsName(node.op) || node.return_bool ? WithoutName(e.labels) : e.labels, e.t, value});
  }
  return out;
}

// VectorAnd, VectorOr, VectorUnless without on/ignoring.
Vector SetOperation(const std::string& op, const Vector& lhs, const Vector& rhs) {
  if (lhs.empty() || rhs.empty()) {
    if (op == "or") return lhs.empty() ? rhs : lhs;
    return op == "and" ? Vector{} : lhs;
  }
  std::unordered_set<std::string> other;
  const Vector& indexed = op == "or" ? lhs : rhs;
  other.reserve(indexed.size());
  for (const auto& e : indexed) other.insert(Signature(*e.labels));
  Vector out;
  if (op == "or") {
    out = lhs;
    for (const auto& e : rhs)
      if (!other.count(Signature(*e.labels))) out.push_back(e);
    return out;
  }
  const bool keep_matched = op == "and";
  for (const auto& e : lhs)
    if (other.count(Signature(*e.labels)) == static_cast<size_t>(keep_matched)) out.push_back(e);
  return out;
}

// aggregation(): groups in order of first appearance, each folded in series order.
Vector Aggregate(const CompositeNode& node, const Vector& input) {
  struct Group {
    std::shared_ptr<const Labels> labels;
    double t = 0;
    double value = 0;
    int64_t count = 0;
  };
  std::vector<Group> groups;
  std::unordered_map<std::string, size_t> index;
  std::string key;
  for (const auto& e : input) {
    key.clear();
    for (const auto& name : node.by)
      if (auto it = e.labels->find(name); it != e.labels->end()) key.append(name).append(1, '\xff').append(it->second).append(1, '\xff');
    auto [it, fresh] = index.try_emplace(key, groups.size());
    if (fresh) {
      auto kept = std::make_shared<Labels>();
      for (const auto& name : node.by)
        if (auto l = e.labels->find(name); l != e.labels->end()) kept->emplace(name, l->second);
      groups.push_back({std::move(kept), e.t, node.op == "group" ? 1.0 : e.v, 1});
      continue;
    }
    Group& g = groups[it->second];
    ++g.count;
    if (node.op == "sum") g.value += e.v;
    else if (node.op == "max" && (g.value < e.v || std::isnan(g.value))) g.value = e.v;
    else if (node.op == "min" && (g.value > e.v || std::isnan(g.value))) g.value = e.v;
  }
  Vector out;
  out.reserve(groups.size());
  for (auto& g : groups) out.push_back({std::move(g.labels), g.t, node.op == "count" ? static_cast<double>(g.count) : g.value});
  return out;
}

Vector LabelReplace(const CompositeNode& node, const Vector& input) {
  Vector out;
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

std::optional<Value> Evaluate(const CompositeNode& node, const std::vector<Vector>& parts) {
  using Kind = CompositeNode::Kind;
  Value out;
  switch (node.kind) {
    case Kind::kPart:
      out.vector = parts[node.part];
      return out;
    case Kind::kNumber:
      out.is_number = true;
      out.number = node.number;
      return out;
    case Kind::kAggregate: {
      auto input = Evaluate(*node.children[0], parts);
      if (!input || input->is_number) return std::nullopt;
      out.vector = Aggregate(node, input->vector);
      break;
    }
    case Kind::kLabelReplace: {
      auto input = Evaluate(*node.children[0], parts);
      if (!input || input->is_number) return std::nullopt;
      out.vector = LabelReplace(node, input->vector);
      break;
    }
    case Kind::kBinary: {
      auto lhs = Evaluate(*node.children[0], parts);
      auto rhs = lhs ? Evaluate(*node.children[1], parts) : std::nullopt;
      if (!lhs || !rhs) return std::nullopt;
      if (IsSetOperator(node.op)) {
        if (lhs->is_number || rhs->is_number) return std::nullopt;
        out.vector = SetOperation(node.op, lhs->vector, rhs->vector);
      } else if (lhs->is_number || rhs->is_number) {
        if (lhs->is_number && rhs->is_number) return std::nullopt;
        out.vector = rhs->is_number ? VectorNumber(node, lhs->vector, rhs->number, false)
                                    : VectorNumber(node, rhs->vector, lhs->number, true);
      } else {
        auto vector = VectorVector(node, lhs->vector, rhs->vector);
        if (!vector) return std::nullopt;
        out.vector = std::move(*vector);
      }
      break;
    }
  }
  if (HasSameLabelSetTwice(out.vector)) return std::nullopt;
  return out;
}

}  // namespace
}  // namespace compose

std::optional<CompositeQuestion> CompositeOf(std::string_view promql) {
  if (promql.size() > 8192) return std::nullopt;   // untrusted text: longer questions stay with the TSDB
  return compose::Parser(promql).Parse();
}

std::optional<QueryResult> AnswerComposite(const CompositeQuestion& question,
                                           const std::vector<const QueryResult*>& part_answers) {
  if (!question.root || part_answers.size() != question.parts.size()) return std::nullopt;
  using compose::Vector;
  std::vector<Vector> parts;
  parts.reserve(part_answers.size());
  QueryResult answer;
  answer.result_type = "vector";
  for (const QueryResult* part : part_answers) {
    if (part == nullptr || part->result_type != "vector") return std::nullopt;
    Vector vector;
    vector.reserve(part->series.size());
    for (const auto& series : part->series) {
      if (series.samples.size() != 1) return std::nullopt;
      // Not owned: the parts' answers outlive this call, and copying ~50 k label sets cost more than the rest.
      vector.push_back({std::shared_ptr<const Labels>(std::shared_ptr<const Labels>(), &series.labels), series.samples[0].t,
                        series.samples[0].v});
    }
    parts.push_back(std::move(vector));
    for (const auto& w : part->warnings)
      if (std::find(answer.warnings.begin(), answer.warnings.end(), w) == answer.warnings.end()) answer.warnings.push_back(w);
  }
  auto value = compose::Evaluate(*question.root, parts);
  if (!value || value->is_number) return std::nullopt;
  answer.series.reserve(value->vector.size());
  for (auto& e : value->vector) answer.series.push_back({*e.labels, {{e.t, e.v}}});
  return answer;
}

}  // namespace diagnose::dag
