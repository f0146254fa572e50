// The playbook and shared-rule loader over untrusted YAML: mode picks a playbook, a rules file, or
// a playbook loaded after the shipped shared rules (so references to them resolve and the deeper
// checks run).
#include <string>

#include "engine/playbook/loader.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace diagnose::playbook;
  std::string_view text = diagnose::fuzz::AsText(data, size);
  const uint8_t mode = diagnose::fuzz::TakeMode(&text) % 3;
  Loader loader;
  if (mode == 0) {
    loader.LoadPlaybookText(std::string(text), "fuzz.yaml");
  } else if (mode == 1) {
    loader.LoadCommonText(std::string(text), "fuzz-rules.yaml");
  } else {
    // Parsed once: re-reading the ~20 shared files per input held the target to ~10 inputs/s.
    static const Loader with_common = [] {
      Loader l;
      l.LoadCommonFiles(FindYamlFiles(std::string(DIAGNOSE_SOURCE_DIR) + "/rules/common", /*include_tests=*/false));
      return l;
    }();
    loader = with_common;
    loader.LoadPlaybookText(std::string(text), "fuzz.yaml");
  }
  for (const auto& d : loader.result().diagnostics()) (void)d.ToString();
  (void)loader.result().AsJson().dump();   // throws on invalid UTF-8: AsJson must never hold any
  return 0;
}
