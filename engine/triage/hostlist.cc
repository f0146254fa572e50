#include "engine/triage/hostlist.h"

#include <cctype>

namespace diagnose {

namespace {

// Splits at top-level commas (not inside brackets).
StatusOr<std::vector<std::string>> SplitTopLevel(const std::string& s) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string cur;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '[') ++depth;
    if (c == ']') {
      if (--depth < 0) return InvalidArgumentError("hostlist '" + s + "': unmatched ']' at column " + std::to_string(i + 1));
    }
    if (c == ',' && depth == 0) {
      if (!cur.empty()) parts.push_back(cur);
      cur.clear();
      continue;
    }
    if (!std::isspace(static_cast<unsigned char>(c))) cur.push_back(c);
  }
  if (depth != 0) return InvalidArgumentError("hostlist '" + s + "': unclosed '['");
  if (!cur.empty()) parts.push_back(cur);
  return parts;
}

// Expands the contents of one bracket group ("2822-2835,2853") into strings with padding kept.
StatusOr<std::vector<std::string>> ExpandRanges(const std::string& body, const std::string& expr) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= body.size()) {
    size_t comma = body.find(',', start);
    std::string item = body.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) return InvalidArgumentError("hostlist '" + expr + "': empty range item");
    size_t dash = item.find('-');
    std::string lo = item.substr(0, dash);
    std::string hi = dash == std::string::npos ? lo : item.substr(dash + 1);
    for (const std::string* part : {&lo, &hi}) {
      if (part->empty() || part->size() > 18) return InvalidArgumentError("hostlist '" + expr + "': bad range '" + item + "'");
      for (char c : *part)
        if (!std::isdigit(static_cast<unsigned char>(c)))
          return InvalidArgumentError("hostlist '" + expr + "': bad range '" + item + "'");
    }
    long long a = std::stoll(lo), b = std::stoll(hi);
    if (b < a) return InvalidArgumentError("hostlist '" + expr + "': descending range '" + item + "'");
    if (b - a > 1000000) return InvalidArgumentError("hostlist '" + expr + "': range too large '" + item + "'");
    size_t width = lo.size() > 1 && lo[0] == '0' ? lo.size() : 0;
    for (long long v = a; v <= b; ++v) {
      std::string n = std::to_string(v);
      if (n.size() < width) n.insert(0, width - n.size(), '0');
      out.push_back(n);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

Status ExpandOne(const std::string& part, const std::string& expr, size_t limit, std::vector<std::string>* out) {
  size_t open = part.find('[');
  if (open == std::string::npos) {
    out->push_back(part);
    return Status::Ok();
  }
  size_t close = part.find(']', open);
  if (close == std::string::npos) return InvalidArgumentError("hostlist '" + expr + "': unclosed '['");
  std::string prefix = part.substr(0, open);
  std::string rest = part.substr(close + 1);
  ASSIGN_OR_RETURN(std::vector<std::string> values, ExpandRanges(part.substr(open + 1, close - open - 1), expr));
  for (const auto& v : values) {
    RETURN_IF_ERROR(ExpandOne(prefix + v + rest, expr, limit, out));
    if (out->size() > limit) return InvalidArgumentError("hostlist '" + expr + "': expands to more than " + std::to_string(limit) + " hosts");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<std::string>> ExpandHostlist(const std::string& expr, size_t limit) {
  ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitTopLevel(expr));
  std::vector<std::string> hosts;
  for (const auto& p : parts) RETURN_IF_ERROR(ExpandOne(p, expr, limit, &hosts));
  return hosts;
}

}  // namespace diagnose
