#include "engine/triage/hostlist.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>

namespace diagnose {

namespace {

// Slurm's MAX_RANGE: a range of more hosts than this is refused ("Too many hosts in range").
constexpr uint64_t kMaxRangeHosts = 65536;
// Slurm reads numbers with strtoul and saturates silently; beyond 18 digits the engine refuses.
constexpr size_t kMaxDigits = 18;

bool IsSeparator(char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n'; }

bool AllDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::string Padded(uint64_t value, size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

Status Invalid(const std::string& expr, const std::string& why) {
  return InvalidArgumentError("hostlist '" + expr + "': " + why);
}

// Splits at separators outside brackets; empty tokens (`a,,b`, leading or trailing commas) are
// skipped, as Slurm skips them.
StatusOr<std::vector<std::string>> SplitTokens(const std::string& expr) {
  std::vector<std::string> tokens;
  std::string current;
  bool in_brackets = false;
  for (size_t i = 0; i < expr.size(); ++i) {
    const char c = expr[i];
    const std::string column = " at column " + std::to_string(i + 1);
    if (c == '[') {
      if (in_brackets) return Invalid(expr, "'[' inside brackets" + column);
      in_brackets = true;
    } else if (c == ']') {
      if (!in_brackets) return Invalid(expr, "unmatched ']'" + column);
      in_brackets = false;
    } else if (in_brackets && (std::isspace(static_cast<unsigned char>(c)) || c == '\0')) {
      return Invalid(expr, "whitespace inside brackets" + column);
    } else if (!in_brackets && IsSeparator(c)) {
      if (!current.empty()) tokens.push_back(current);
      current.clear();
      continue;
    }
    current.push_back(c);
  }
  if (in_brackets) return Invalid(expr, "unclosed '['");
  if (!current.empty()) tokens.push_back(current);
  return tokens;
}

// The numbers of one bracket group ("2822-2835,2853"), each padded to the width of its range's
// low end.
StatusOr<std::vector<std::string>> ExpandRanges(const std::string& body, const std::string& expr, size_t limit) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = body.find(',', start);
    const std::string item = body.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t dash = item.find('-');
    const std::string lo = item.substr(0, dash);
    const std::string hi = dash == std::string::npos ? "" : item.substr(dash + 1);
    // `1-` is `1` to Slurm; `1--2`, `-2`, `1-2-3` and anything but digits are refused.
    if (!AllDigits(lo) || (!hi.empty() && !AllDigits(hi))) return Invalid(expr, "bad range '" + item + "'");
    if (lo.size() > kMaxDigits || hi.size() > kMaxDigits) return Invalid(expr, "number too long in '" + item + "'");
    const uint64_t a = std::stoull(lo);
    const uint64_t b = hi.empty() ? a : std::stoull(hi);
    if (b < a) return Invalid(expr, "descending range '" + item + "'");
    if (b - a + 1 > kMaxRangeHosts)
      return Invalid(expr, "range '" + item + "' has more than " + std::to_string(kMaxRangeHosts) + " hosts");
    if (out.size() + (b - a + 1) > limit)
      return Invalid(expr, "expands to more than " + std::to_string(limit) + " hosts");
    for (uint64_t v = a; v <= b; ++v) out.push_back(Padded(v, lo.size()));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// One token: literal, then any number of `[ranges]literal`, the last literal empty.
Status ExpandToken(const std::string& token, const std::string& expr, size_t limit, std::vector<std::string>* out) {
  std::vector<std::string> literals;   // literals[i] precedes group i; one more than groups
  std::vector<std::vector<std::string>> groups;
  size_t pos = 0;
  while (true) {
    const size_t open = token.find('[', pos);
    literals.push_back(token.substr(pos, open == std::string::npos ? std::string::npos : open - pos));
    if (open == std::string::npos) break;
    const size_t close = token.find(']', open);   // SplitTokens saw it balanced
    ASSIGN_OR_RETURN(std::vector<std::string> values,
                     ExpandRanges(token.substr(open + 1, close - open - 1), expr, limit));
    groups.push_back(std::move(values));
    pos = close + 1;
  }
  if (groups.empty()) {
    out->push_back(token);
    return Status::Ok();
  }
  if (!literals.back().empty()) return Invalid(expr, "text after the last ']' in '" + token + "'");

  size_t total = 1;
  for (const auto& g : groups) {
    if (total > limit / g.size()) return Invalid(expr, "expands to more than " + std::to_string(limit) + " hosts");
    total *= g.size();
  }
  if (out->size() + total > limit) return Invalid(expr, "expands to more than " + std::to_string(limit) + " hosts");

  // Slurm expands the last group innermost and walks the others from the one before last (outermost)
  // down to the first: rack[1-2]-n[1-2]-g[1-2] gives rack1-n1-g1, rack1-n1-g2, rack2-n1-g1, ...
  const size_t n = groups.size();
  std::vector<size_t> nesting;   // outermost first
  for (size_t g = n - 1; g-- > 0;) nesting.push_back(g);
  nesting.push_back(n - 1);
  std::vector<size_t> index(n, 0);
  for (size_t produced = 0; produced < total; ++produced) {
    std::string host = literals[0];
    for (size_t g = 0; g < n; ++g) host += groups[g][index[g]] + literals[g + 1];
    out->push_back(std::move(host));
    for (size_t level = nesting.size(); level-- > 0;) {
      const size_t g = nesting[level];
      if (++index[g] < groups[g].size()) break;
      index[g] = 0;
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<std::string>> ExpandHostlist(const std::string& expr, size_t limit) {
  ASSIGN_OR_RETURN(std::vector<std::string> tokens, SplitTokens(expr));
  std::vector<std::string> hosts;
  for (const auto& token : tokens) RETURN_IF_ERROR(ExpandToken(token, expr, limit, &hosts));
  return hosts;
}

std::string CompressHostlist(const std::vector<std::string>& hosts) {
  struct Parsed {
    std::string prefix, digits;   // digits empty: a host kept verbatim (in prefix)
  };
  std::vector<Parsed> parsed;
  // Widths of the zero-padded numbers seen per prefix: an unpadded number with exactly that many
  // digits joins the padded group (n08, n09, n10 -> n[08-10]).
  std::map<std::string, std::set<size_t>> padded_widths;
  for (const std::string& host : hosts) {
    size_t begin = host.size();
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(host[begin - 1]))) --begin;
    Parsed p;
    if (begin == host.size() || host.size() - begin > kMaxDigits) {
      p.prefix = host;
    } else {
      p.prefix = host.substr(0, begin);
      p.digits = host.substr(begin);
      if (p.digits.size() > 1 && p.digits[0] == '0') padded_widths[p.prefix].insert(p.digits.size());
    }
    parsed.push_back(std::move(p));
  }

  using Key = std::tuple<bool, std::string, size_t>;   // numeric, prefix (or the host), width (0: unpadded)
  std::vector<Key> order;
  std::map<Key, std::vector<uint64_t>> numbers;
  for (const Parsed& p : parsed) {
    size_t width = 0;
    if (!p.digits.empty() && padded_widths[p.prefix].count(p.digits.size())) width = p.digits.size();
    const Key key{!p.digits.empty(), p.prefix, width};
    auto [it, inserted] = numbers.try_emplace(key);
    if (inserted) order.push_back(key);
    if (!p.digits.empty()) it->second.push_back(std::stoull(p.digits));
  }

  std::string out;
  for (const Key& key : order) {
    if (!out.empty()) out += ',';
    const auto& [numeric, prefix, width] = key;
    if (!numeric) {
      out += prefix;
      continue;
    }
    std::vector<uint64_t> nums = numbers[key];
    std::sort(nums.begin(), nums.end());
    nums.erase(std::unique(nums.begin(), nums.end()), nums.end());
    if (nums.size() == 1) {
      out += prefix + Padded(nums[0], width);
      continue;
    }
    std::string body;
    for (size_t i = 0; i < nums.size();) {
      size_t j = i;
      while (j + 1 < nums.size() && nums[j + 1] == nums[j] + 1 && nums[j + 1] - nums[i] < kMaxRangeHosts) ++j;
      if (!body.empty()) body += ',';
      body += Padded(nums[i], width);
      if (j > i) body += "-" + Padded(nums[j], width);
      i = j + 1;
    }
    out += prefix + "[" + body + "]";
  }
  return out;
}

}  // namespace diagnose
