// How a PromQL answer becomes a rule's value (playbooks/README §3.1): series keyed by `by`
// labels with the host resolved from host, instance or ip labels, reduced per series and combined
// per key. Shared by the evaluator and the playbook test runner.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/playbook/playbook.h"
#include "engine/tsdb/query_client.h"

namespace diagnose::dag {

// The host a series belongs to (README §3.1 host key): host label, else instance_hosts[instance],
// else instance without :port, else instance_hosts[ip], else ip; "" when none.
std::string HostOfSeries(const Labels& labels, const nlohmann::json& instance_hosts);

// The hosts of a `hosts` query parameter and every other name their series may carry: the
// addresses and FQDNs discovery mapped to them (instance_hosts; ports dropped). A host's own
// `<host>:<port>` instances add nothing, so a job whose exporters name their node as the nodelist
// does renders the same list.
nlohmann::json WithReportedNames(const nlohmann::json& hosts, const nlohmann::json& instance_hosts);

// {values, hosts, count, query, window, max/min/sum/avg, series (range), reduced (several reductions)}.
nlohmann::json QueryResultJson(const playbook::RuleSpec& rule, const QueryResult& result,
                               const nlohmann::json& instance_hosts, const std::string& promql, double start,
                               double end);

}  // namespace diagnose::dag
