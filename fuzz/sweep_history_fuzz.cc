// The sweep history (JSON lines written by concurrent diagnose runs, possibly torn or edited by
// hand): parse, then the retry-chain queries every decision makes over it.
#include <sstream>
#include <string>

#include "engine/decision/sweep_history.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace diagnose;
  std::istringstream in{std::string(fuzz::AsText(data, size))};
  SweepHistory history = ParseSweepHistory(in, "fuzz.jsonl");
  for (const auto& entry : history.entries) {
    const HistoryEntry* previous = FindRetryPredecessor(history, entry.sweep, entry.job, entry.config, entry.nodes);
    (void)RetryChain(history, previous);
    (void)EncodeHistoryLine(entry);
  }
  return 0;
}
