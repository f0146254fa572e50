// The log line model: srun/Ray prefix peeling, absl prefixes, ANSI stripping and quoting, then the
// whole triage scanner over the same bytes as one log file.
#include <string>

#include "engine/log/log_line.h"
#include "engine/triage/log_scanner.h"
#include "engine/triage/signature_table.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace diagnose;
  static const SignatureMatcher matcher(fuzz::ShippedSignatureTable(), LogScanner::Triggers());
  static const ScanLimits limits = ScanLimitsFromTable(fuzz::ShippedSignatureTable()).value();
  const std::string_view text = fuzz::AsText(data, size);
  LogScanner scanner(fuzz::ShippedSignatureTable(), matcher, limits, "fuzz.log", /*default_task=*/-1, /*file_index=*/0);
  std::string scratch, stripped;
  int64_t line_number = 0;
  for (std::string_view line : fuzz::Lines(text)) {
    int task = -1;
    bool ray_driver = false;
    PeelLauncherPrefixes(line, &task, &ray_driver);
    ParseLogLine(line, &scratch);
    AbslPrefix prefix;
    ParseAbslPrefix(line, &prefix);
    StripAnsi(line, &stripped);
    SanitizeForQuote(line);
    scanner.Feed(line, ++line_number);
  }
  ScanResult merged;
  merged.Merge(std::move(scanner.result()), limits);
  return 0;
}
