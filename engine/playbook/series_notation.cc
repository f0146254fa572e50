#include "engine/playbook/series_notation.h"

#include <cctype>
#include <cmath>
#include <regex>
#include <sstream>

namespace diagnose::playbook {
namespace {

bool ParseNumber(const std::string& s, double* out) {
  if (s == "Inf" || s == "+Inf" || s == "inf" || s == "+inf") {
    *out = INFINITY;
    return true;
  }
  if (s == "-Inf" || s == "-inf") {
    *out = -INFINITY;
    return true;
  }
  if (s == "NaN" || s == "nan") {
    *out = NAN;
    return true;
  }
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end != nullptr && *end == '\0';
}

bool ParseCount(const std::string& s, long* out) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  *out = std::stol(s);
  return true;
}

// A playbook test's series spans hours at most (a few thousand points); a count beyond this is a
// typo or an attack, refused before a byte is allocated for it.
constexpr size_t kMaxExpandedPoints = 1'000'000;

}  // namespace

StatusOr<std::vector<SeriesPoint>> ExpandSeriesValues(const std::string& text) {
  std::vector<SeriesPoint> out;
  std::istringstream in(text);
  std::string tok;
  int index = 0;
  while (in >> tok) {
    ++index;
    auto bad = [&](const std::string& why) {
      return InvalidArgumentError("values item " + std::to_string(index) + " '" + tok + "': " + why);
    };
    if (tok == "_") {
      out.push_back({SeriesPoint::Kind::kMissing, 0});
      continue;
    }
    if (tok == "stale") {
      out.push_back({SeriesPoint::Kind::kStale, 0});
      continue;
    }
    if (tok.rfind("_x", 0) == 0) {
      long n = 0;
      if (!ParseCount(tok.substr(2), &n)) return bad("expected _x<count>");
      if (out.size() + static_cast<size_t>(n) > kMaxExpandedPoints) return bad("expands to more than 1,000,000 samples");
      for (long i = 0; i < n; ++i) out.push_back({SeriesPoint::Kind::kMissing, 0});
      continue;
    }
    size_t x = tok.rfind('x');
    if (x == std::string::npos) {
      double v = 0;
      if (!ParseNumber(tok, &v)) return bad("not a number");
      out.push_back({SeriesPoint::Kind::kValue, v});
      continue;
    }
    long n = 0;
    if (!ParseCount(tok.substr(x + 1), &n)) return bad("expected <count> after 'x'");
    std::string head = tok.substr(0, x);
    // Split a+b / a-b at the first sign that is not the leading sign or an exponent sign.
    size_t op = std::string::npos;
    for (size_t i = 1; i < head.size(); ++i) {
      if ((head[i] == '+' || head[i] == '-') && head[i - 1] != 'e' && head[i - 1] != 'E') {
        op = i;
        break;
      }
    }
    double a = 0, b = 0;
    if (op == std::string::npos) {
      if (!ParseNumber(head, &a)) return bad("not a number before 'x'");
    } else {
      if (!ParseNumber(head.substr(0, op), &a) || !ParseNumber(head.substr(op + 1), &b))
        return bad("expected a+bxn or a-bxn");
      if (head[op] == '-') b = -b;
    }
    if (out.size() + static_cast<size_t>(n) + 1 > kMaxExpandedPoints) return bad("expands to more than 1,000,000 samples");
    for (long i = 0; i <= n; ++i) out.push_back({SeriesPoint::Kind::kValue, a + b * i});
  }
  return out;
}

StatusOr<Labels> ParseSeriesSelector(const std::string& text) {
  Labels labels;
  size_t i = 0;
  auto skip = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  skip();
  size_t name_start = i;
  while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_' || text[i] == ':')) ++i;
  if (i > name_start) labels["__name__"] = text.substr(name_start, i - name_start);
  skip();
  if (i < text.size() && text[i] == '{') {
    ++i;
    while (true) {
      skip();
      if (i < text.size() && text[i] == '}') {
        ++i;
        break;
      }
      size_t ks = i;
      while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_')) ++i;
      std::string key = text.substr(ks, i - ks);
      if (key.empty()) return InvalidArgumentError("series '" + text + "': expected a label name at offset " + std::to_string(i));
      skip();
      if (i >= text.size() || text[i] != '=')
        return InvalidArgumentError("series '" + text + "': expected '=' after label '" + key + "'");
      ++i;
      skip();
      if (i >= text.size() || text[i] != '"')
        return InvalidArgumentError("series '" + text + "': label '" + key + "' needs a double-quoted value");
      ++i;
      std::string value;
      while (i < text.size() && text[i] != '"') {
        if (text[i] == '\\' && i + 1 < text.size()) {
          ++i;
          value += text[i] == 'n' ? '\n' : text[i];
        } else {
          value += text[i];
        }
        ++i;
      }
      if (i >= text.size()) return InvalidArgumentError("series '" + text + "': unterminated label value");
      ++i;
      labels[key] = value;
      skip();
      if (i < text.size() && text[i] == ',') {
        ++i;
        continue;
      }
      skip();
      if (i < text.size() && text[i] == '}') {
        ++i;
        break;
      }
      return InvalidArgumentError("series '" + text + "': expected ',' or '}'");
    }
  }
  skip();
  if (i != text.size()) return InvalidArgumentError("series '" + text + "': unexpected text at offset " + std::to_string(i));
  if (!labels.count("__name__") || labels["__name__"].empty())
    return InvalidArgumentError("series '" + text + "': no metric name");
  return labels;
}

Series MaterializeSeries(const Labels& labels, const std::vector<SeriesPoint>& points, double start, double interval) {
  Series s;
  s.labels = labels;
  for (size_t i = 0; i < points.size(); ++i)
    if (points[i].kind == SeriesPoint::Kind::kValue) s.samples.push_back({start + interval * i, points[i].value});
  return s;
}

}  // namespace diagnose::playbook
