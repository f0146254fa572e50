#include "engine/dag/query_result.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "engine/core/scrape_target.h"

namespace diagnose::dag {
namespace {

using nlohmann::json;
using playbook::RuleSpec;
using diagnose::Reduction;

std::string Lookup(const json& map, const std::string& key) {
  if (map.is_object()) {
    auto it = map.find(key);
    if (it != map.end() && it->is_string()) return it->get<std::string>();
  }
  return "";
}

// `host` is the series' host (HostOfSeries), found once by the caller.
std::string KeyOf(const Labels& labels, const std::vector<std::string>& by, const std::string& host) {
  std::string key;
  for (size_t i = 0; i < by.size(); ++i) {
    std::string part;
    if (by[i] == "host") {
      part = host;
    } else {
      auto it = labels.find(by[i]);
      part = it == labels.end() ? "" : it->second;
    }
    key += (i ? "/" : "") + part;
  }
  return key;
}

double Reduce(const std::vector<Sample>& samples, Reduction how) {
  if (samples.empty()) return std::nan("");
  if (how == Reduction::kLast) return samples.back().v;
  if (how == Reduction::kFirst) return samples.front().v;
  if (how == Reduction::kCount) return static_cast<double>(samples.size());
  double sum = 0, lo = samples[0].v, hi = samples[0].v;
  for (const auto& s : samples) {
    sum += s.v;
    lo = std::min(lo, s.v);
    hi = std::max(hi, s.v);
  }
  if (how == Reduction::kSum) return sum;
  if (how == Reduction::kMin) return lo;
  if (how == Reduction::kMax) return hi;
  double mean = sum / samples.size();
  if (how == Reduction::kAvg) return mean;
  double var = 0;
  for (const auto& s : samples) var += (s.v - mean) * (s.v - mean);
  return samples.size() > 1 ? std::sqrt(var / (samples.size() - 1)) : 0;   // stddev
}

// Series with the same key are combined: summed for sum/count, minimum for min, maximum otherwise.
double Combine(double a, double b, Reduction how) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  if (how == Reduction::kSum || how == Reduction::kCount) return a + b;
  if (how == Reduction::kMin) return std::min(a, b);
  return std::max(a, b);
}

// The [time, value] points of the series sharing one key, in time order, a time several of them
// (or one, twice) have combined in the order the series came. The answer's series are already in
// time order, so sorting is the exception; a tree per key cost more than the rest of the reading.
json PointsJson(std::vector<std::pair<double, double>>& points, bool sorted, Reduction how) {
  if (!sorted) {
    std::stable_sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  json::array_t list;
  list.reserve(points.size());
  for (size_t i = 0; i < points.size();) {
    const double t = points[i].first;
    double v = points[i].second;
    for (++i; i < points.size() && points[i].first == t; ++i) v = Combine(v, points[i].second, how);
    list.emplace_back(json::array_t{json(t), json(v)});
  }
  return json(std::move(list));
}

}  // namespace

json QueryResultJson(const RuleSpec& rule, const QueryResult& result, const json& instance_hosts,
                     const std::string& promql, double start, double end) {
  const auto& q = rule.query;
  json values = json::object();
  json reduced = json::object();
  struct KeyPoints {
    std::vector<std::pair<double, double>> points;   // NaN values left out
    bool sorted = true;                              // strictly increasing times
  };
  std::map<std::string, KeyPoints> series;
  std::set<std::string> hosts;
  // A key's value combined with the next series' (one look-up of the key, not three).
  auto combine_into = [](json& map, const std::string& key, double v, Reduction how) {
    auto [at, fresh] = map.get_ref<json::object_t&>().try_emplace(key, v);
    if (!fresh) at->second = Combine(at->second.get<double>(), v, how);
  };
  for (const auto& s : result.series) {
    std::string host = HostOfSeries(s.labels, instance_hosts);
    std::string key = KeyOf(s.labels, q.by, host);
    if (!host.empty()) hosts.insert(host);
    if (q.range && q.reductions.size() > 1) {
      for (const auto& how : q.reductions) {
        double v = Reduce(s.samples, how);
        if (std::isnan(v)) continue;
        auto& slot = reduced[std::string(diagnose::ToString(how))];
        if (slot.is_null()) slot = json::object();
        combine_into(slot, key, v, how);
      }
    }
    double v = q.range ? Reduce(s.samples, q.reduce) : (s.samples.empty() ? std::nan("") : s.samples.back().v);
    if (std::isnan(v)) continue;
    combine_into(values, key, v, q.range ? q.reduce : Reduction::kMax);
    if (q.range) {
      KeyPoints& key_points = series[key];
      for (const auto& smp : s.samples) {
        if (std::isnan(smp.v)) continue;
        if (!key_points.points.empty() && !(key_points.points.back().first < smp.t)) key_points.sorted = false;
        key_points.points.emplace_back(smp.t, smp.v);
      }
    }
  }
  json out;
  const size_t value_count = values.size();
  double lo = 1e300, hi = -1e300, sum = 0;
  for (const auto& [k, v] : values.items()) {
    double x = v.get<double>();
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
  }
  out["values"] = std::move(values);
  if (q.range && q.reductions.size() > 1) {
    for (const auto& how : q.reductions)
      if (!reduced.contains(std::string(diagnose::ToString(how)))) reduced[std::string(diagnose::ToString(how))] = json::object();
    out["reduced"] = std::move(reduced);
  }
  out["hosts"] = json(std::vector<std::string>(hosts.begin(), hosts.end()));
  out["count"] = value_count;
  out["query"] = promql;
  out["window"] = {{"start", start}, {"end", end}};
  if (value_count > 0) {
    out["max"] = hi;
    out["min"] = lo;
    out["sum"] = sum;
    out["avg"] = sum / value_count;
  }
  if (q.range) {
    json sj = json::object();
    for (auto& [k, key_points] : series) sj[k] = PointsJson(key_points.points, key_points.sorted, q.reduce);
    out["series"] = std::move(sj);
  }
  return out;
}


json WithReportedNames(const json& hosts, const json& instance_hosts) {
  if (!hosts.is_array() || !instance_hosts.is_object()) return hosts;
  std::set<std::string> listed;
  for (const auto& h : hosts)
    if (h.is_string()) listed.insert(h.get<std::string>());
  // An alias names one node: a loopback target or a name several nodes reported (every exporter
  // scraped as localhost) would select other nodes' series.
  std::map<std::string, std::set<std::string>> nodes_of;
  for (const auto& [reported, node] : instance_hosts.items())
    if (node.is_string()) nodes_of[InstanceHost(reported)].insert(node.get<std::string>());
  json out = hosts;
  for (const auto& [name, nodes] : nodes_of) {
    if (name.empty() || listed.count(name) || nodes.size() != 1 || !listed.count(*nodes.begin())) continue;
    if (name == "localhost" || name == "127.0.0.1" || name == "::1") continue;
    out.push_back(name);
    // A target names an IPv6 address in brackets ([fe80::1]:9400): the queries' instance
    // alternative matches the name as the target spells it.
    if (name.find(':') != std::string::npos) out.push_back("[" + name + "]");
  }
  return out;
}

std::string HostOfSeries(const Labels& labels, const json& instance_hosts) {
  auto get = [&](const char* k) {
    auto it = labels.find(k);
    return it == labels.end() ? std::string() : it->second;
  };
  std::string host = get("host");
  if (!host.empty()) {
    // An exporter that reports an FQDN: discovery maps it to the nodelist's name.
    std::string mapped = Lookup(instance_hosts, host);
    return mapped.empty() ? host : mapped;
  }
  std::string instance = get("instance");
  if (!instance.empty()) {
    std::string mapped = Lookup(instance_hosts, instance);
    if (!mapped.empty()) return mapped;
    std::string bare = InstanceHost(instance);
    mapped = Lookup(instance_hosts, bare);
    if (!mapped.empty()) return mapped;
    if (!bare.empty() && bare != "localhost" && bare != "127.0.0.1") return bare;
  }
  std::string ip = get("ip");
  if (!ip.empty()) {
    std::string mapped = Lookup(instance_hosts, ip);
    return mapped.empty() ? ip : mapped;
  }
  return "";
}


}  // namespace diagnose::dag
