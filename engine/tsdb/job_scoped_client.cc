#include "engine/tsdb/job_scoped_client.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "engine/core/utf8.h"
#include "engine/tsdb/promql_escape.h"

namespace diagnose {

namespace {

bool IdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool IdentChar(char c) { return IdentStart(c) || std::isdigit(static_cast<unsigned char>(c)); }

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Words that are never a metric name where they stand (PromQL keywords are case-insensitive).
bool IsKeyword(const std::string& word) {
  static const std::array<const char*, 14> kKeywords = {"and",        "or",          "unless", "by",     "without",
                                                        "on",         "ignoring",    "bool",   "offset", "group_left",
                                                        "group_right", "atan2",      "inf",    "nan"};
  return std::any_of(kKeywords.begin(), kKeywords.end(), [&](const char* k) { return word == k; });
}
bool OpensLabelList(const std::string& word) {
  return word == "by" || word == "without" || word == "on" || word == "ignoring" || word == "group_left" ||
         word == "group_right";
}
bool IsAggregation(const std::string& word) {
  static const std::array<const char*, 13> kAggregations = {"sum",    "min",      "max",          "avg",
                                                            "group",  "stddev",   "stdvar",       "count",
                                                            "count_values", "bottomk", "topk", "quantile",
                                                            "limitk"};
  return std::any_of(kAggregations.begin(), kAggregations.end(), [&](const char* k) { return word == k; });
}

class Scoper {
 public:
  // `selectors`, when given, receives each vector selector as written (before the matcher is added).
  Scoper(std::string_view in, std::string_view matcher, std::vector<std::string>* selectors = nullptr)
      : in_(in), matcher_(matcher), selectors_(selectors) {}

  StatusOr<std::string> Run() {
    while (pos_ < in_.size()) {
      const char c = in_[pos_];
      if (c == '"' || c == '\'' || c == '`') {
        RETURN_IF_ERROR(CopyString());
      } else if (c == '#') {   // comment to the end of the line
        while (pos_ < in_.size() && in_[pos_] != '\n') out_ += in_[pos_++];
      } else if (c == '[') {   // range or subquery: durations only
        RETURN_IF_ERROR(CopyGroup('[', ']'));
      } else if (c == '{') {   // a selector without a metric name
        RETURN_IF_ERROR(CopyMatchers(""));
      } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                 (c == '.' && pos_ + 1 < in_.size() && std::isdigit(static_cast<unsigned char>(in_[pos_ + 1])))) {
        CopyNumber();
      } else if (IdentStart(c)) {
        RETURN_IF_ERROR(Identifier());
      } else {
        out_ += c;
        ++pos_;
      }
    }
    return out_;
  }

 private:
  Status Unterminated(const char* what) const {
    return InvalidArgumentError(std::string("the query ends inside ") + what + ": " + OneLine(std::string(in_)));
  }

  Status CopyString() {
    const char quote = in_[pos_];
    out_ += in_[pos_++];
    while (pos_ < in_.size()) {
      const char c = in_[pos_++];
      out_ += c;
      if (c == '\\' && quote != '`' && pos_ < in_.size()) {
        out_ += in_[pos_++];
      } else if (c == quote) {
        return Status::Ok();
      }
    }
    return Unterminated("a string");
  }

  // Copies from an opening to its closing character, strings inside included.
  Status CopyGroup(char open, char close) {
    int depth = 0;
    while (pos_ < in_.size()) {
      const char c = in_[pos_];
      if (c == '"' || c == '\'' || c == '`') {
        RETURN_IF_ERROR(CopyString());
        continue;
      }
      out_ += c;
      ++pos_;
      if (c == open) ++depth;
      if (c == close && --depth == 0) return Status::Ok();
    }
    return Unterminated(open == '{' ? "a brace" : open == '[' ? "a bracket" : "a parenthesis");
  }

  // `{...}` with the matcher added before the closing brace; `name` the metric name before it, if any.
  Status CopyMatchers(std::string_view name) {
    const size_t start = out_.size();
    RETURN_IF_ERROR(CopyGroup('{', '}'));
    std::string inner = out_.substr(start + 1, out_.size() - start - 2);
    const size_t last = inner.find_last_not_of(" \t\r\n");
    inner.erase(last == std::string::npos ? 0 : last + 1);
    if (selectors_ != nullptr) selectors_->push_back(std::string(name) + "{" + inner + "}");
    out_.resize(start);
    out_ += "{" + inner + (inner.empty() || inner.back() == ',' ? "" : ",") + std::string(matcher_) + "}";
    return Status::Ok();
  }

  void CopyNumber() {   // 1, 1.5, 1e-3, 0x1f, 5m30s
    while (pos_ < in_.size()) {
      const char c = in_[pos_];
      const bool exponent_sign = (c == '+' || c == '-') && pos_ > 0 && (in_[pos_ - 1] == 'e' || in_[pos_ - 1] == 'E') &&
                                 !out_.empty() && std::isdigit(static_cast<unsigned char>(out_[out_.size() - 2]));
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || exponent_sign)) break;
      out_ += c;
      ++pos_;
    }
  }

  size_t NextSignificant(size_t from) const {
    while (from < in_.size() && std::isspace(static_cast<unsigned char>(in_[from]))) ++from;
    return from;
  }

  Status Identifier() {
    const size_t begin = pos_;
    while (pos_ < in_.size() && IdentChar(in_[pos_])) ++pos_;
    const std::string word(in_.substr(begin, pos_ - begin));
    const std::string lower = Lower(word);
    out_ += word;
    const size_t next = NextSignificant(pos_);
    const char after = next < in_.size() ? in_[next] : '\0';
    if (OpensLabelList(lower)) {
      if (after == '(') {   // label names, not metrics
        out_.append(in_.substr(pos_, next - pos_));
        pos_ = next;
        return CopyGroup('(', ')');
      }
      return Status::Ok();   // group_left without a list
    }
    if (after == '(' || IsKeyword(lower)) return Status::Ok();   // a function, or a keyword
    if (IsAggregation(lower)) {   // `sum by (host) (...)`: the word before `by`/`without`
      size_t w = next;
      while (w < in_.size() && IdentChar(in_[w])) ++w;
      const std::string following = Lower(in_.substr(next, w - next));
      if (following == "by" || following == "without") return Status::Ok();
    }
    if (after == '{') {   // metric{...}
      out_.append(in_.substr(pos_, next - pos_));
      pos_ = next;
      return CopyMatchers(word);
    }
    if (selectors_ != nullptr) selectors_->push_back(word);
    out_ += "{" + std::string(matcher_) + "}";
    return Status::Ok();
  }

  std::string_view in_;
  std::string_view matcher_;
  std::vector<std::string>* selectors_;
  size_t pos_ = 0;
  std::string out_;
};

// `questions` scoped by `scope` (a question's copy with the job's matcher added), those it accepts
// sent together by `send`; one it refuses keeps the refusal in its place and is not sent.
template <typename Answer, typename Question, typename Scope, typename Send>
std::vector<StatusOr<Answer>> ScopedBatch(const std::vector<Question>& questions, Scope scope, Send send) {
  std::vector<Question> scoped;
  std::vector<StatusOr<Answer>> results(questions.size(), InvalidArgumentError("not asked"));
  std::vector<size_t> sent;
  for (size_t i = 0; i < questions.size(); ++i) {
    StatusOr<Question> question = scope(questions[i]);
    if (!question.ok()) {
      results[i] = question.status();
      continue;
    }
    scoped.push_back(std::move(question).value());
    sent.push_back(i);
  }
  std::vector<StatusOr<Answer>> answers = send(scoped);
  for (size_t k = 0; k < sent.size() && k < answers.size(); ++k) results[sent[k]] = std::move(answers[k]);
  return results;
}

}  // namespace

StatusOr<std::string> AddMatcherToSelectors(std::string_view promql, std::string_view matcher) {
  return Scoper(promql, matcher).Run();
}

StatusOr<std::vector<std::string>> VectorSelectorsOf(std::string_view promql) {
  std::vector<std::string> selectors;
  RETURN_IF_ERROR(Scoper(promql, "", &selectors).Run().status());
  return selectors;
}

StatusOr<std::string> JobMatcher(std::string_view name, std::string_view value) {
  if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return IdentChar(c) && c != ':'; }) ||
      std::isdigit(static_cast<unsigned char>(name[0])))
    return InvalidArgumentError("'" + OneLine(std::string(name)) + "' is not a label name ([a-zA-Z_][a-zA-Z0-9_]*)");
  return std::string(name) + "=\"" + EscapePromqlString(value) + "\"";
}

StatusOr<QueryResult> JobScopedClient::Run(const Query& query) {
  ASSIGN_OR_RETURN(std::string promql, AddMatcherToSelectors(query.promql, matcher_));
  Query scoped = query;
  scoped.promql = std::move(promql);
  return inner_.Run(scoped);
}

std::vector<StatusOr<QueryResult>> JobScopedClient::RunBatch(const std::vector<Query>& queries) {
  return ScopedBatch<QueryResult>(
      queries,
      [this](const Query& q) -> StatusOr<Query> {
        ASSIGN_OR_RETURN(std::string promql, AddMatcherToSelectors(q.promql, matcher_));
        Query out = q;
        out.promql = std::move(promql);
        return out;
      },
      [this](const std::vector<Query>& scoped) { return inner_.RunBatch(scoped); });
}

StatusOr<std::vector<std::string>> JobScopedClient::Scoped(const std::vector<std::string>& matchers) const {
  if (matchers.empty()) return std::vector<std::string>{"{" + matcher_ + "}"};
  std::vector<std::string> out;
  for (const auto& m : matchers) {
    ASSIGN_OR_RETURN(std::string scoped, AddMatcherToSelectors(m, matcher_));
    out.push_back(std::move(scoped));
  }
  return out;
}

template <typename Question>
StatusOr<Question> JobScopedClient::WithScopedMatchers(const Question& question) const {
  ASSIGN_OR_RETURN(std::vector<std::string> matchers, Scoped(question.matchers));
  Question out = question;
  out.matchers = std::move(matchers);
  return out;
}

StatusOr<std::vector<std::string>> JobScopedClient::LabelValues(const std::string& label,
                                                                const std::vector<std::string>& matchers,
                                                                double start, double end) {
  ASSIGN_OR_RETURN(std::vector<std::string> scoped, Scoped(matchers));
  return inner_.LabelValues(label, scoped, start, end);
}

std::vector<StatusOr<std::vector<std::string>>> JobScopedClient::LabelValuesBatch(
    const std::vector<LabelValuesQuestion>& questions) {
  return ScopedBatch<std::vector<std::string>>(
      questions, [this](const LabelValuesQuestion& q) { return WithScopedMatchers(q); },
      [this](const std::vector<LabelValuesQuestion>& scoped) { return inner_.LabelValuesBatch(scoped); });
}

StatusOr<std::vector<Labels>> JobScopedClient::SeriesMatching(const std::vector<std::string>& matchers, double start,
                                                              double end) {
  ASSIGN_OR_RETURN(std::vector<std::string> scoped, Scoped(matchers));
  return inner_.SeriesMatching(scoped, start, end);
}

std::vector<StatusOr<int64_t>> JobScopedClient::SeriesCountsForEstimate(const std::vector<SeriesQuestion>& questions) {
  return ScopedBatch<int64_t>(
      questions, [this](const SeriesQuestion& q) { return WithScopedMatchers(q); },
      [this](const std::vector<SeriesQuestion>& scoped) { return inner_.SeriesCountsForEstimate(scoped); });
}

}  // namespace diagnose
