#include "tests/support/overlay_playbook.h"

#include <stdexcept>

#include "tests/support/files.h"

namespace diagnose::testing {

std::string WriteHotHostsPlaybook(const std::filesystem::path& dir, const std::string& id) {
  const std::string source = std::string(DIAGNOSE_SOURCE_DIR) + "/tests/support/testdata/hot_hosts.yaml";
  std::string text = ReadFileOrEmpty(source);
  const std::string first_line = "playbook: my-hot-hosts\n";
  if (text.rfind(first_line, 0) != 0) throw std::runtime_error(source + " does not start with '" + first_line + "'");
  text.replace(0, first_line.size(), "playbook: " + id + "\n");
  return WriteFile(dir / "hot.yaml", text);
}

}  // namespace diagnose::testing
