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
  state.mode = "private-copy";
  state.source = server.inventory().dir;
  state.state = "served";
  AttachDiscovery(state, discovery);
  for (const auto& caveat : server.caveats()) state.gaps.push_back(caveat);
  return state;
}

TsdbState RemoteTsdbState(const std::string& description, const Discovery& discovery) {
  TsdbState state;
  state.mode = "remote";
  state.source = description;
  state.state = "remote";
  AttachDiscovery(state, discovery);
  return state;
}

TsdbState UnavailableTsdbState(const std::string& mode, const std::string& source, const Status& why) {
  TsdbState state;
  state.mode = mode;
  state.source = source;
  state.state = "unavailable";
  state.reason = why.message();
  state.gaps.push_back("no TSDB evidence: " + why.message() + "; only log evidence was used");
  return state;
}

}  // namespace diagnose
