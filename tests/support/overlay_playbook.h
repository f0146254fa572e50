// A user's own playbook (tests/support/testdata/hot_hosts.yaml: hosts hotter than their peers, a
// finding that never fires on a real job), as `diagnose JOB --playbooks DIR` and
// `diagnose lint --playbooks DIR` load it on top of the shipped set.
#pragma once

#include <filesystem>
#include <string>

namespace diagnose::testing {

// Writes it as dir/hot.yaml under the playbook id `id`; returns the file's path.
std::string WriteHotHostsPlaybook(const std::filesystem::path& dir, const std::string& id = "my-hot-hosts");

}  // namespace diagnose::testing
