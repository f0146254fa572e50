// The failure-signature table: mode 0 parses the bytes as a signature table (YAML) and, when it
// loads, matches its own text against it; any other mode matches each line against the shipped
// table, with and without the scanner's triggers.
#include <string>
#include <vector>

#include "engine/triage/log_scanner.h"
#include "engine/triage/signature_table.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace diagnose;
  std::string_view text = fuzz::AsText(data, size);
  std::vector<int> classes;
  uint32_t triggers = 0;
  if (fuzz::TakeMode(&text) % 4 == 0) {
    auto table = ParseSignatureTable(std::string(text), "fuzz.yaml");
    if (!table.ok()) return 0;
    SignatureMatcher matcher(*table);
    for (std::string_view line : fuzz::Lines(text)) matcher.Match(line, &classes);
    return 0;
  }
  static const SignatureMatcher plain(fuzz::ShippedSignatureTable());
  static const SignatureMatcher with_triggers(fuzz::ShippedSignatureTable(), LogScanner::Triggers());
  for (std::string_view line : fuzz::Lines(text)) {
    plain.Match(line, &classes);
    with_triggers.Match(line, &classes, &triggers);
  }
  return 0;
}
