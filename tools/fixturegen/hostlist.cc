#include "tools/fixturegen/hostlist.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>

namespace diagnose::fixturegen {
namespace {

// Splits on commas that are not inside brackets.
std::vector<std::string> SplitTopLevel(const std::string& s) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  parts.push_back(current);
  return parts;
}

bool AllDigits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace

StatusOr<std::vector<std::string>> ExpandHostlist(const std::string& expression) {
  std::vector<std::string> hosts;
  for (const std::string& part : SplitTopLevel(expression)) {
    if (part.empty()) return InvalidArgumentError("empty element in hostlist '" + expression + "'");
    auto open = part.find('[');
    if (open == std::string::npos) {
      if (part.find(']') != std::string::npos)
        return InvalidArgumentError("unbalanced ']' in hostlist '" + expression + "'");
      hosts.push_back(part);
      continue;
    }
    auto close = part.find(']', open);
    if (close == std::string::npos)
      return InvalidArgumentError("unbalanced '[' in hostlist '" + expression + "'");
    std::string prefix = part.substr(0, open), suffix = part.substr(close + 1);
    if (suffix.find('[') != std::string::npos)
      return InvalidArgumentError("more than one bracket group in '" + part + "' is not supported");
    std::string body = part.substr(open + 1, close - open - 1);
    for (const std::string& range : SplitTopLevel(body)) {
      auto dash = range.find('-');
      std::string lo = range.substr(0, dash), hi = dash == std::string::npos ? lo : range.substr(dash + 1);
      if (!AllDigits(lo) || !AllDigits(hi))
        return InvalidArgumentError("bad range '" + range + "' in hostlist '" + expression + "'");
      long a = std::stol(lo), b = std::stol(hi);
      if (b < a) return InvalidArgumentError("descending range '" + range + "' in '" + expression + "'");
      if (b - a > 100000) return InvalidArgumentError("range '" + range + "' is too large");
      size_t width = lo.size();
      for (long n = a; n <= b; ++n) {
        std::string digits = std::to_string(n);
        if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
        hosts.push_back(prefix + digits + suffix);
      }
    }
  }
  return hosts;
}

std::string CompressHostlist(const std::vector<std::string>& hosts) {
  // A host is prefix + digits + suffix. Zero-padded numbers fix the group's width; an unpadded
  // number with exactly that many digits belongs to the same group (01-09 and 10-11 -> [01-11]).
  struct Parsed {
    std::string prefix, digits, suffix;
    bool numeric = false;
  };
  std::vector<Parsed> parsed;
  std::map<std::pair<std::string, std::string>, std::set<size_t>> padded_widths;
  for (const std::string& host : hosts) {
    Parsed p;
    size_t end = host.size();
    while (end > 0 && !std::isdigit(static_cast<unsigned char>(host[end - 1]))) --end;
    size_t begin = end;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(host[begin - 1]))) --begin;
    p.numeric = begin != end && end - begin <= 15;
    if (p.numeric) {
      p.prefix = host.substr(0, begin);
      p.digits = host.substr(begin, end - begin);
      p.suffix = host.substr(end);
      if (p.digits.size() > 1 && p.digits[0] == '0') padded_widths[{p.prefix, p.suffix}].insert(p.digits.size());
    } else {
      p.prefix = host;
    }
    parsed.push_back(p);
  }
  using Key = std::tuple<std::string, std::string, size_t>;   // prefix, suffix, width (0 = unpadded)
  std::vector<Key> order;
  std::map<Key, std::vector<long>> numbers;
  for (const Parsed& p : parsed) {
    if (!p.numeric) {
      Key key{"\x01" + p.prefix, "", 0};
      if (!numbers.count(key)) order.push_back(key);
      numbers[key];
      continue;
    }
    size_t width = 0;
    const auto& widths = padded_widths[{p.prefix, p.suffix}];
    if (widths.count(p.digits.size())) width = p.digits.size();
    Key key{p.prefix, p.suffix, width};
    if (!numbers.count(key)) order.push_back(key);
    numbers[key].push_back(std::stol(p.digits));
  }
  std::string out;
  for (const Key& key : order) {
    if (!out.empty()) out += ',';
    const auto& [prefix, suffix, width] = key;
    if (!prefix.empty() && prefix[0] == '\x01') {
      out += prefix.substr(1);
      continue;
    }
    std::vector<long> nums = numbers[key];
    std::sort(nums.begin(), nums.end());
    nums.erase(std::unique(nums.begin(), nums.end()), nums.end());
    auto fmt = [w = width](long n) {
      std::string d = std::to_string(n);
      if (d.size() < w) d.insert(0, w - d.size(), '0');
      return d;
    };
    if (nums.size() == 1) {
      out += prefix + fmt(nums[0]) + suffix;
      continue;
    }
    std::string body;
    for (size_t i = 0; i < nums.size();) {
      size_t j = i;
      while (j + 1 < nums.size() && nums[j + 1] == nums[j] + 1) ++j;
      if (!body.empty()) body += ',';
      body += fmt(nums[i]);
      if (j > i) body += "-" + fmt(nums[j]);
      i = j + 1;
    }
    out += prefix + "[" + body + "]" + suffix;
  }
  return out;
}

}  // namespace diagnose::fixturegen
