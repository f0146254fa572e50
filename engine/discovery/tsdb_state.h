// The report's `tsdb` entry for one job: where its metrics came from (a private copy, a remote
// endpoint, or nowhere and why), the discovery facts and the observability gaps found.
#pragma once

#include <string>

#include "engine/core/status.h"
#include "engine/discovery/discovery.h"
#include "engine/report/report.h"
#include "engine/tsdb/private_prometheus.h"

namespace diagnose {

TsdbState ServedTsdbState(const PrivatePrometheus& server, const Discovery& discovery);
TsdbState RemoteTsdbState(const std::string& description, const Discovery& discovery);
// `mode` is what was attempted (a private copy or a remote endpoint); `why` says what failed.
TsdbState UnavailableTsdbState(TsdbMode mode, const std::string& source, const Status& why);

}  // namespace diagnose
