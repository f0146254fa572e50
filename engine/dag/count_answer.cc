#include "engine/dag/count_answer.h"
#include "engine/dag/promql_lexis.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <variant>

#include "engine/analysis/analysis.h"
#include "engine/tsdb/promql_escape.h"

namespace diagnose::dag {

struct CountNode {
  enum class Op { kLeaf, kAggregate, kScalar, kNumber, kDivide, kArithmetic, kCompare, kAnd, kUnless };
  Op op = Op::kLeaf;
  int leaf = -1;                                // kLeaf
  std::string aggregation;                      // kAggregate: sum min max count group
  std::vector<std::string> labels;              // kAggregate: by; kAnd/kUnless: on
  bool on = false;                              // kAnd/kUnless: `on (labels)` given
  double number = 0;                            // kNumber
  std::string comparison;                       // kCompare: == != > < >= <=; kArithmetic: + -
  std::vector<std::shared_ptr<const CountNode>> children;

  bool IsVector() const { return op != Op::kScalar && op != Op::kNumber; }
};

namespace {

using NodePtr = std::shared_ptr<const CountNode>;
using Op = CountNode::Op;

// The index of the bracket closing the one at `open`, string literals skipped; npos if none (or a
// comment, which nothing here reads past).
size_t Closing(std::string_view s, size_t open) {
  int depth = 0;
  for (size_t j = open; j < s.size(); ++j) {
    const char c = s[j];
    if (c == '"' || c == '\'' || c == '`') {
      j = EndOfPromqlString(s, j);
      if (j >= s.size()) return std::string_view::npos;
    } else if (c == '#') {
      return std::string_view::npos;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if ((c == ')' || c == ']' || c == '}') && --depth == 0) {
      return j;
    }
  }
  return std::string_view::npos;
}

// A recursive-descent reader of the recognised subset, PromQL's precedence kept: `/` binds tighter
// than comparisons, which bind tighter than `and`/`unless` (left-associative).
class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  std::optional<CountExpression> Parse() {
    NodePtr root = SetOperation();
    Skip();
    if (!root || failed_ || i_ != s_.size() || !root->IsVector()) return std::nullopt;
    out_.root = std::move(root);
    return std::move(out_);
  }

 private:
  NodePtr Fail() {
    failed_ = true;
    return nullptr;
  }

  void Skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }

  std::string_view PeekWord() {
    Skip();
    size_t j = i_;
    if (j < s_.size() && IsPromqlNameStart(s_[j]))
      while (j < s_.size() && IsPromqlNameChar(s_[j])) ++j;
    return s_.substr(i_, j - i_);
  }

  bool Eat(char c) {
    Skip();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }

  // `(a, b)`: label names, none of them __name__ (which the leaves never carry).
  std::optional<std::vector<std::string>> LabelList() {
    if (!Eat('(')) return std::nullopt;
    std::vector<std::string> names;
    if (Eat(')')) return names;
    do {
      std::string_view word = PeekWord();
      if (word.empty() || word.find(':') != std::string_view::npos || word == "__name__") return std::nullopt;
      names.emplace_back(word);
      i_ += word.size();
    } while (Eat(','));
    if (!Eat(')')) return std::nullopt;
    return names;
  }

  NodePtr SetOperation() {
    // Playbook text is untrusted: nesting deep enough to exhaust the stack is left to the TSDB.
    if (++depth_ > kMaxDepth) return Fail();
    NodePtr lhs = Comparison();
    while (lhs && !failed_) {
      std::string_view word = PeekWord();
      if (word == "or") return Fail();
      if (word != "and" && word != "unless") break;
      auto node = std::make_shared<CountNode>();
      node->op = word == "and" ? Op::kAnd : Op::kUnless;
      i_ += word.size();
      std::string_view modifier = PeekWord();
      if (modifier == "on") {
        i_ += modifier.size();
        auto labels = LabelList();
        if (!labels) return Fail();
        node->on = true;
        node->labels = std::move(*labels);
      } else if (modifier == "ignoring" || modifier == "group_left" || modifier == "group_right") {
        return Fail();
      }
      NodePtr rhs = Comparison();
      if (!rhs || !lhs->IsVector() || !rhs->IsVector()) return Fail();
      node->children = {lhs, rhs};
      lhs = std::move(node);
    }
    --depth_;
    return lhs;
  }

  NodePtr Comparison() {
    NodePtr lhs = Additive();
    while (lhs && !failed_) {
      Skip();
      if (i_ >= s_.size()) break;
      const char c = s_[i_];
      const bool two = i_ + 1 < s_.size() && s_[i_ + 1] == '=';
      std::string op;
      if (c == '>' || c == '<') op = two ? std::string{c, '='} : std::string{c};
      else if ((c == '=' || c == '!') && two) op = std::string{c, '='};
      else if (c == '=' || c == '!') return Fail();   // `=~`, `!~` out of a selector
      else break;
      i_ += op.size();
      if (PeekWord() == "bool") return Fail();   // values become 0/1: not a filter
      NodePtr rhs = Additive();
      if (!rhs || rhs->op != Op::kNumber || !lhs->IsVector()) return Fail();
      auto node = std::make_shared<CountNode>();
      node->op = Op::kCompare;
      node->comparison = std::move(op);
      node->children = {lhs, rhs};
      lhs = std::move(node);
    }
    return lhs;
  }

  // `a - b`, `a + b` of two vectors, matched one-to-one on all their labels (no modifiers).
  NodePtr Additive() {
    NodePtr lhs = Division();
    while (lhs && !failed_) {
      Skip();
      if (i_ >= s_.size() || (s_[i_] != '+' && s_[i_] != '-')) break;
      auto node = std::make_shared<CountNode>();
      node->op = Op::kArithmetic;
      node->comparison = std::string(1, s_[i_++]);
      std::string_view modifier = PeekWord();
      if (modifier == "on" || modifier == "ignoring" || modifier == "bool") return Fail();
      NodePtr rhs = Division();
      if (!rhs || !lhs->IsVector() || !rhs->IsVector()) return Fail();
      node->children = {lhs, rhs};
      lhs = std::move(node);
    }
    return lhs;
  }

  NodePtr Division() {
    NodePtr lhs = Primary();
    while (lhs && !failed_) {
      Skip();
      if (i_ >= s_.size()) break;
      const char c = s_[i_];
      if (c == '*' || c == '%' || c == '^') return Fail();
      if (c == '+' || c == '-') break;
      if (c != '/') {
        if (PeekWord() == "atan2") return Fail();
        break;
      }
      ++i_;
      NodePtr rhs = Primary();
      // vector / scalar only: a vector on the right needs vector matching.
      if (!rhs || rhs->IsVector() || !lhs->IsVector()) return Fail();
      auto node = std::make_shared<CountNode>();
      node->op = Op::kDivide;
      node->children = {lhs, rhs};
      lhs = std::move(node);
    }
    return lhs;
  }

  NodePtr Leaf(size_t begin) {
    Skip();
    if (i_ >= s_.size() || s_[i_] != '(') return Fail();
    const size_t close = Closing(s_, i_);
    if (close == std::string_view::npos) return Fail();
    const std::string text(s_.substr(begin, close + 1 - begin));
    i_ = close + 1;
    auto node = std::make_shared<CountNode>();
    node->op = Op::kLeaf;
    auto found = std::find(out_.leaves.begin(), out_.leaves.end(), text);
    node->leaf = static_cast<int>(found - out_.leaves.begin());
    if (found == out_.leaves.end()) {
      out_.leaves.push_back(text);
      out_.leaf_reads.push_back(0);
    }
    ++out_.leaf_reads[node->leaf];
    return node;
  }

  NodePtr Number() {
    size_t j = i_;
    while (j < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[j])) || s_[j] == '.')) ++j;
    if (j < s_.size() && (s_[j] == 'e' || s_[j] == 'E')) {
      ++j;
      if (j < s_.size() && (s_[j] == '+' || s_[j] == '-')) ++j;
      while (j < s_.size() && std::isdigit(static_cast<unsigned char>(s_[j]))) ++j;
    }
    const std::string text(s_.substr(i_, j - i_));
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v)) return Fail();
    if (j < s_.size() && IsPromqlNameChar(s_[j])) return Fail();   // a duration (5m) or hex: not a number here
    i_ = j;
    auto node = std::make_shared<CountNode>();
    node->op = Op::kNumber;
    node->number = v;
    return node;
  }

  NodePtr Primary() {
    Skip();
    if (i_ >= s_.size()) return Fail();
    if (s_[i_] == '(') {
      ++i_;
      NodePtr inner = SetOperation();
      if (!inner || !Eat(')')) return Fail();
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.') return Number();
    const size_t begin = i_;
    std::string_view word = PeekWord();
    i_ += word.size();
    // A range function's answer per series, which Prometheus computes: the leaves.
    if (word.size() > 10 && word.substr(word.size() - 10) == "_over_time") return Leaf(begin);
    if (word == "scalar") {
      if (!Eat('(')) return Fail();
      NodePtr inner = SetOperation();
      if (!inner || !inner->IsVector() || !Eat(')')) return Fail();
      auto node = std::make_shared<CountNode>();
      node->op = Op::kScalar;
      node->children = {inner};
      return node;
    }
    if (word == "sum" || word == "min" || word == "max" || word == "count" || word == "group") {
      auto node = std::make_shared<CountNode>();
      node->op = Op::kAggregate;
      node->aggregation = std::string(word);
      bool grouped = false;
      auto grouping = [&] {
        std::string_view clause = PeekWord();
        if (clause == "without") return false;
        if (clause != "by") return true;
        i_ += clause.size();
        auto labels = LabelList();
        if (!labels || grouped) return false;
        grouped = true;
        node->labels = std::move(*labels);
        return true;
      };
      if (!grouping() || !Eat('(')) return Fail();
      NodePtr inner = SetOperation();
      if (!inner || !inner->IsVector() || !Eat(')') || !grouping()) return Fail();
      node->children = {inner};
      return node;
    }
    return Fail();
  }

  static constexpr int kMaxDepth = 64;
  std::string_view s_;
  size_t i_ = 0;
  int depth_ = 0;
  bool failed_ = false;
  CountExpression out_;
};

// Values at each evaluation time: an instant vector's elements, or a scalar.
using Element = std::pair<Labels, double>;
using Vectors = std::map<double, std::vector<Element>>;
using Scalars = std::map<double, double>;
using Value = std::variant<Vectors, Scalars, double>;

constexpr double kExactIntegerLimit = 9007199254740992.0;   // 2^53

class Evaluation {
 public:
  explicit Evaluation(std::vector<Vectors> leaves) : leaves_(std::move(leaves)) {}

  std::optional<Value> Of(const CountNode& node) {
    switch (node.op) {
      case Op::kLeaf: return leaves_.at(node.leaf);
      case Op::kNumber: return node.number;
      case Op::kScalar: return ScalarOf(node);
      case Op::kAggregate: return Aggregate(node);
      case Op::kDivide: return Divide(node);
      case Op::kArithmetic: return Arithmetic(node);
      case Op::kCompare: return Compare(node);
      case Op::kAnd:
      case Op::kUnless: return SetOperation(node);
    }
    return std::nullopt;
  }

 private:
  std::optional<Vectors> VectorOf(const CountNode& node) {
    auto v = Of(node);
    if (!v || !std::holds_alternative<Vectors>(*v)) return std::nullopt;
    return std::get<Vectors>(std::move(*v));
  }

  // scalar(v): the value of v's only element, NaN where v has none or several.
  std::optional<Value> ScalarOf(const CountNode& node) {
    auto v = VectorOf(*node.children[0]);
    if (!v) return std::nullopt;
    Scalars out;
    for (const auto& [t, elements] : *v) out[t] = elements.size() == 1 ? elements[0].second : std::nan("");
    return out;
  }

  // As Prometheus' aggregation(): one output element per group of the `by` labels a series has
  // (an empty value is no label), folded in series order; only folds that do not depend on it.
  std::optional<Value> Aggregate(const CountNode& node) {
    auto v = VectorOf(*node.children[0]);
    if (!v) return std::nullopt;
    Vectors out;
    for (const auto& [t, elements] : *v) {
      struct Group {
        double value = 0;
        int64_t count = 0;
        bool positive_zero = false, negative_zero = false;
      };
      std::map<Labels, Group> groups;
      for (const auto& [labels, x] : elements) {
        Labels key;
        for (const auto& name : node.labels)
          if (auto it = labels.find(name); it != labels.end() && !it->second.empty()) key.emplace(name, it->second);
        auto [it, fresh] = groups.try_emplace(std::move(key));
        Group& g = it->second;
        if (x == 0) (std::signbit(x) ? g.negative_zero : g.positive_zero) = true;
        if (node.aggregation == "sum") {
          // Exact in any order only while every term and partial sum is an integer below 2^53.
          if (x != std::floor(x) || std::fabs(x) > kExactIntegerLimit) return std::nullopt;
          g.value = fresh ? x : g.value + x;
          if (std::fabs(g.value) > kExactIntegerLimit) return std::nullopt;
        } else if (fresh) {
          g.value = x;
        } else if (node.aggregation == "max" && (g.value < x || std::isnan(g.value))) {
          g.value = x;
        } else if (node.aggregation == "min" && (g.value > x || std::isnan(g.value))) {
          g.value = x;
        }
        ++g.count;
      }
      auto& row = out[t];
      for (auto& [labels, g] : groups) {
        double value = g.value;
        if (node.aggregation == "count") value = static_cast<double>(g.count);
        else if (node.aggregation == "group") value = 1;
        else if (value == 0 && g.positive_zero && g.negative_zero) return std::nullopt;   // which zero is order
        row.emplace_back(labels, value);
      }
    }
    return out;
  }

  std::optional<Value> Divide(const CountNode& node) {
    auto lhs = VectorOf(*node.children[0]);
    auto rhs = Of(*node.children[1]);
    if (!lhs || !rhs) return std::nullopt;
    for (auto& [t, elements] : *lhs) {
      double divisor = std::nan("");
      if (const double* number = std::get_if<double>(&*rhs)) {
        divisor = *number;
      } else if (const auto* scalars = std::get_if<Scalars>(&*rhs)) {
        if (auto it = scalars->find(t); it != scalars->end()) divisor = it->second;
      } else {
        return std::nullopt;
      }
      for (auto& element : elements) element.second /= divisor;
    }
    return std::move(*lhs);
  }

  // Prometheus' one-to-one vector matching on every label but the metric name, which the result
  // drops; a side with two series of one signature is an error there: refused here.
  std::optional<Value> Arithmetic(const CountNode& node) {
    auto lhs = VectorOf(*node.children[0]);
    auto rhs = VectorOf(*node.children[1]);
    if (!lhs || !rhs) return std::nullopt;
    const bool minus = node.comparison == "-";
    Vectors out;
    for (auto& [t, elements] : *lhs) {
      std::map<Labels, double> right;
      if (auto it = rhs->find(t); it != rhs->end())
        for (const auto& [labels, x] : it->second)
          if (!right.emplace(Signature(node, labels), x).second) return std::nullopt;
      std::set<Labels> left;
      std::vector<Element> matched;
      for (auto& [labels, x] : elements) {
        Labels signature = Signature(node, labels);
        if (!left.insert(signature).second) return std::nullopt;
        auto it = right.find(signature);
        if (it == right.end()) continue;
        matched.emplace_back(std::move(signature), minus ? x - it->second : x + it->second);
      }
      if (!matched.empty()) out.emplace(t, std::move(matched));
    }
    return out;
  }

  std::optional<Value> Compare(const CountNode& node) {
    auto lhs = VectorOf(*node.children[0]);
    if (!lhs) return std::nullopt;
    const double threshold = node.children[1]->number;
    const std::string& op = node.comparison;
    // A filter: NaN compares false with everything but `!=`.
    auto keep = [&](double v) { return ComparisonHolds(op, v, threshold); };
    Vectors out;
    for (auto& [t, elements] : *lhs) {
      std::vector<Element> kept;
      for (auto& element : elements)
        if (keep(element.second)) kept.push_back(std::move(element));
      if (!kept.empty()) out.emplace(t, std::move(kept));
    }
    return out;
  }

  // Prometheus' matching signature: the `on` labels' values (absent = empty), or without `on` every
  // label but the metric name.
  static Labels Signature(const CountNode& node, const Labels& labels) {
    if (!node.on) {
      Labels all = labels;
      all.erase("__name__");
      return all;
    }
    Labels signature;
    for (const auto& name : node.labels)
      if (auto it = labels.find(name); it != labels.end() && !it->second.empty()) signature.emplace(name, it->second);
    return signature;
  }

  // `and` keeps the left-hand elements whose signature the right-hand side has; `unless` the others.
  std::optional<Value> SetOperation(const CountNode& node) {
    auto lhs = VectorOf(*node.children[0]);
    auto rhs = VectorOf(*node.children[1]);
    if (!lhs || !rhs) return std::nullopt;
    const bool keep_matched = node.op == Op::kAnd;
    Vectors out;
    for (auto& [t, elements] : *lhs) {
      std::set<Labels> signatures;
      if (auto it = rhs->find(t); it != rhs->end())
        for (const auto& [labels, x] : it->second) signatures.insert(Signature(node, labels));
      std::vector<Element> kept;
      for (auto& element : elements)
        if (signatures.count(Signature(node, element.first)) == static_cast<size_t>(keep_matched))
          kept.push_back(std::move(element));
      if (!kept.empty()) out.emplace(t, std::move(kept));
    }
    return out;
  }

  std::vector<Vectors> leaves_;
};

// A leaf answer as values per time: no metric name (a range function drops it), one element per
// label set, and for count_over_time a count (a non-negative integer).
std::optional<Vectors> LeafValues(const QueryResult& answer, const std::string& result_type, bool counts) {
  if (answer.result_type != result_type) return std::nullopt;
  Vectors out;
  std::set<Labels> seen;
  for (const auto& series : answer.series) {
    if (series.labels.count("__name__") || !seen.insert(series.labels).second) return std::nullopt;
    for (const auto& sample : series.samples) {
      if (counts && (!(sample.v >= 0) || sample.v != std::floor(sample.v) || sample.v > kExactIntegerLimit)) return std::nullopt;
      out[sample.t].emplace_back(series.labels, sample.v);
    }
  }
  return out;
}

// Where only a leaf's presence reaches the answer, and on which labels: `on` is nullopt where the
// values of `node` are needed, else the labels the answer matches `node`'s elements on.
using Presence = std::optional<std::vector<std::string>>;

void MarkUses(const CountNode& node, const Presence& on, std::vector<std::vector<Presence>>* uses) {
  auto below = [&](const CountNode& child, const Presence& child_on) { MarkUses(child, child_on, uses); };
  switch (node.op) {
    case Op::kLeaf:
      (*uses)[node.leaf].push_back(on);
      return;
    case Op::kNumber:
      return;
    case Op::kScalar:
      return below(*node.children[0], std::nullopt);
    case Op::kAggregate: {
      // A group is present where one of its series is: matched on the `on` labels it keeps.
      if (!on) return below(*node.children[0], std::nullopt);
      std::vector<std::string> kept;
      for (const auto& name : *on)
        if (std::find(node.labels.begin(), node.labels.end(), name) != node.labels.end()) kept.push_back(name);
      return below(*node.children[0], kept);
    }
    case Op::kCompare: {
      // A filter every count passes (`count(...) > 0`) keeps presence; any other reads values.
      const CountNode& child = *node.children[0];
      const double t = node.children[1]->number;
      const bool passes_counts = child.op == Op::kAggregate && (child.aggregation == "count" || child.aggregation == "group") &&
                                 ((node.comparison == ">" && t < 1) || (node.comparison == ">=" && t <= 1) ||
                                  (node.comparison == "!=" && t < 1));
      return below(child, passes_counts ? on : std::nullopt);
    }
    case Op::kArithmetic:
      below(*node.children[0], std::nullopt);
      return below(*node.children[1], std::nullopt);
    case Op::kDivide:
      below(*node.children[0], on);
      return below(*node.children[1], std::nullopt);
    case Op::kAnd:
    case Op::kUnless:
      below(*node.children[0], on);
      // Without `on` every label is matched: the counts' label sets are needed whole.
      return below(*node.children[1], node.on ? Presence(node.labels) : std::nullopt);
  }
}

std::vector<Presence> PresenceOn(const CountExpression& expression) {
  std::vector<std::vector<Presence>> uses(expression.leaves.size());
  MarkUses(*expression.root, std::nullopt, &uses);
  std::vector<Presence> out;
  for (const auto& leaf_uses : uses) {
    std::set<std::string> labels;
    bool presence_only = true;
    for (const auto& use : leaf_uses) {
      if (!use) presence_only = false;
      else labels.insert(use->begin(), use->end());
    }
    if (presence_only && labels.size() <= 1) out.emplace_back(std::vector<std::string>(labels.begin(), labels.end()));
    else out.emplace_back(std::nullopt);
  }
  return out;
}

// `count_over_time(<metric>[{...}][<range>])` split into its selector and range.
struct RangeSelector {
  std::string selector;
  std::string range;
};

std::optional<RangeSelector> RangeSelectorOf(std::string_view leaf) {
  constexpr std::string_view kCall = "count_over_time(";
  if (leaf.substr(0, kCall.size()) != kCall || leaf.back() != ')') return std::nullopt;
  std::string_view inner = leaf.substr(kCall.size(), leaf.size() - kCall.size() - 1);
  while (!inner.empty() && std::isspace(static_cast<unsigned char>(inner.back()))) inner.remove_suffix(1);
  while (!inner.empty() && std::isspace(static_cast<unsigned char>(inner.front()))) inner.remove_prefix(1);
  size_t i = 0;
  while (i < inner.size() && IsPromqlNameChar(inner[i])) ++i;
  if (i == 0 || !IsPromqlNameStart(inner[0])) return std::nullopt;
  if (i < inner.size() && inner[i] == '{') {
    const size_t close = Closing(inner, i);
    if (close == std::string_view::npos) return std::nullopt;
    i = close + 1;
  }
  if (i >= inner.size() || inner[i] != '[' || inner.back() != ']') return std::nullopt;
  const std::string_view range = inner.substr(i + 1, inner.size() - i - 2);
  for (char c : range)
    if (!std::isalnum(static_cast<unsigned char>(c))) return std::nullopt;   // no subquery, offset or @
  return RangeSelector{std::string(inner.substr(0, i)), std::string(range)};
}

// Prometheus' default lookback: an instant selector sees a series' sample at most this old.
constexpr double kLookbackSeconds = 300;

std::string CountBy(const std::vector<std::string>& on, const std::string& inner) {
  return on.empty() ? "count(" + inner + ")" : "count by (" + on[0] + ") (" + inner + ")";
}

}  // namespace

std::optional<std::string> PresenceNowQuery(const std::string& leaf, const std::vector<std::string>& on) {
  auto parts = RangeSelectorOf(leaf);
  double range_seconds = 0;
  if (!parts || on.size() > 1 || !analysis::ParseDurationSeconds(parts->range, &range_seconds) ||
      range_seconds < kLookbackSeconds)
    return std::nullopt;
  return CountBy(on, parts->selector);
}

std::optional<std::string> PresenceElsewhereQuery(const std::string& leaf, const std::vector<std::string>& on,
                                                  const QueryResult& now) {
  auto parts = RangeSelectorOf(leaf);
  if (!parts || on.size() > 1) return std::nullopt;
  if (on.empty() && !now.series.empty()) return std::nullopt;
  std::string selector = parts->selector;
  if (!on.empty() && !now.series.empty()) {
    std::set<std::string> present;
    for (const auto& series : now.series) {
      auto it = series.labels.find(on[0]);
      present.insert(it == series.labels.end() ? "" : it->second);
    }
    const std::string matcher = on[0] + "!~\"" + PromqlAlternation({present.begin(), present.end()}) + "\"";
    if (selector.back() != '}') selector += "{" + matcher + "}";
    else selector.insert(selector.size() - 1, selector[selector.size() - 2] == '{' ? matcher : ", " + matcher);
  }
  return CountBy(on, "count_over_time(" + selector + "[" + parts->range + "])");
}

QueryResult PresenceAnswer(const std::vector<std::string>& on, const QueryResult& now, const QueryResult* elsewhere) {
  std::map<Labels, double> present;   // label set -> evaluation time
  for (const QueryResult* answer : {&now, elsewhere}) {
    if (answer == nullptr) continue;
    for (const auto& series : answer->series) {
      Labels labels;
      for (const auto& name : on)
        if (auto it = series.labels.find(name); it != series.labels.end() && !it->second.empty()) labels.emplace(name, it->second);
      if (!series.samples.empty()) present.emplace(std::move(labels), series.samples.front().t);
    }
  }
  QueryResult out;
  out.result_type = now.result_type;
  out.warnings = now.warnings;
  for (const auto& [labels, t] : present) out.series.push_back({labels, {{t, 1}}});
  return out;
}

std::optional<CountExpression> CountExpressionOf(std::string_view promql) {
  // Bounds the expression tree, whose evaluation and destruction recurse (playbook text is untrusted).
  if (promql.size() > 8192) return std::nullopt;
  auto expression = Parser(promql).Parse();
  // A bare count is a leaf itself: asked as it is, and other questions may share it.
  if (!expression || expression->root->op == Op::kLeaf) return std::nullopt;
  expression->presence_on = PresenceOn(*expression);
  return expression;
}

std::optional<QueryResult> AnswerFromCounts(const CountExpression& expression,
                                            const std::vector<const QueryResult*>& leaf_answers, Query::Kind kind) {
  if (!expression.root || leaf_answers.size() != expression.leaves.size()) return std::nullopt;
  const std::string result_type = kind == Query::Kind::kInstant ? "vector" : "matrix";
  std::vector<Vectors> leaves;
  QueryResult out;
  out.result_type = result_type;
  for (size_t l = 0; l < leaf_answers.size(); ++l) {
    const QueryResult* answer = leaf_answers[l];
    if (answer == nullptr) return std::nullopt;
    auto values = LeafValues(*answer, result_type, expression.leaves[l].rfind("count_over_time(", 0) == 0);
    if (!values) return std::nullopt;
    leaves.push_back(std::move(*values));
    for (const auto& warning : answer->warnings)
      if (std::find(out.warnings.begin(), out.warnings.end(), warning) == out.warnings.end()) out.warnings.push_back(warning);
    out.effective_step = std::max(out.effective_step, answer->effective_step);
  }
  auto value = Evaluation(std::move(leaves)).Of(*expression.root);
  if (!value || !std::holds_alternative<Vectors>(*value)) return std::nullopt;
  std::map<Labels, std::vector<Sample>> series;
  for (const auto& [t, elements] : std::get<Vectors>(*value))
    for (const auto& [labels, v] : elements) series[labels].push_back({t, v});
  for (auto& [labels, samples] : series) out.series.push_back({labels, std::move(samples)});
  return out;
}

}  // namespace diagnose::dag
