#include "tools/fixturegen/hostlist.h"

#include <algorithm>
#include <cctype>
#include <map>
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
  // key: prefix, suffix, width (0 = unpadded)
  using Key = std::tuple<std::string, std::string, size_t>;
  std::vector<Key> order;
  std::map<Key, std::vector<long>> numbers;
  std::vector<std::pair<size_t, std::string>> verbatim;  // position in `order` to emit before
  for (const std::string& host : hosts) {
    size_t end = host.size();
    while (end > 0 && !std::isdigit(static_cast<unsigned char>(host[end - 1]))) --end;
    size_t begin = end;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(host[begin - 1]))) --begin;
    if (begin == end || end - begin > 15) {
      verbatim.emplace_back(order.size(), host);
      order.emplace_back("\x01" + host, "", 0);
      continue;
    }
    std::string digits = host.substr(begin, end - begin);
    size_t width = digits.size() > 1 && digits[0] == '0' ? digits.size() : 0;
    Key key{host.substr(0, begin), host.substr(end), width};
    if (!numbers.count(key)) order.push_back(key);
    numbers[key].push_back(std::stol(digits));
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
    auto fmt = [&, w = width](long n) {
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
