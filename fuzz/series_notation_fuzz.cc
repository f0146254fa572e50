// promtool's input-series notation from playbook test files: `metric{label="v"}` selectors and
// value strings such as `0+10x3 _ stale 5x2`, then the samples they expand to.
#include <string>

#include "engine/playbook/series_notation.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace diagnose::playbook;
  std::string_view text = diagnose::fuzz::AsText(data, size);
  // "selector\nvalues": the two fields of one input_series entry.
  const size_t nl = text.find('\n');
  const std::string selector(text.substr(0, nl));
  const std::string values(nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1));
  auto labels = ParseSeriesSelector(selector);
  auto points = ExpandSeriesValues(values);
  if (labels.ok() && points.ok()) (void)MaterializeSeries(*labels, *points, 1'700'000'000, 15);
  return 0;
}
