#include "engine/discovery/tsdb_state.h"

namespace diagnose {
namespace {

void AttachDiscovery(TsdbState& state, const Discovery& discovery) {
  state.discovery = discovery.ToJson();
  state.gaps = discovery.GapSentences();
  if (discovery.guard.status == "mismatch") state.gaps.insert(state.gaps.begin(), discovery.guard.message);
}

}  // namespace

TsdbState ServedTsdbState(const PrivatePrometheus& server, const Discovery& discovery) {
  TsdbState state;
  state.mode = TsdbMode::kPrivateCopy;
  state.source = server.inventory().dir;
  state.state = TsdbAvailability::kServed;
  AttachDiscovery(state, discovery);
  for (const auto& caveat : server.caveats()) state.gaps.push_back(caveat);
  return state;
}

TsdbState RemoteTsdbState(const std::string& description, const Discovery& discovery) {
  TsdbState state;
  state.mode = TsdbMode::kRemote;
  state.source = description;
  state.state = TsdbAvailability::kRemote;
  AttachDiscovery(state, discovery);
  return state;
}

TsdbState UnavailableTsdbState(TsdbMode mode, const std::string& source, const Status& why) {
  TsdbState state;
  state.mode = mode;
  state.source = source;
  state.state = TsdbAvailability::kUnavailable;
  state.reason = why.message();
  state.gaps.push_back("no TSDB evidence: " + why.message() + "; only log evidence was used");
  return state;
}

}  // namespace diagnose
