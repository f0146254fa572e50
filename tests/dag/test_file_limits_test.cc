// `diagnose test FILE` reads YAML written by others. A 680-byte alias bomb names one node 10^9
// times; expanded, it took 4 GB and aborted. It must be refused, quickly, in bounded memory.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "engine/dag/test_runner.h"

namespace diagnose::dag {
namespace {

namespace fs = std::filesystem;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

// Every key is one a test may carry, so only the size limit can refuse it.
std::string AliasBomb(const std::string& use) {
  std::string yaml = "playbooks: [host-oom]\ntests:\n  - name: bomb\n    facts:\n      a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  const std::string names = "abcdefghi";
  for (size_t i = 1; i < names.size(); ++i) {
    yaml += std::string("      ") + names[i] + ": &" + names[i] + " [";
    for (int k = 0; k < 10; ++k) yaml += std::string(k ? ", " : "") + "*" + names[i - 1];
    yaml += "]\n";
  }
  return yaml + use + "\n    expect: {root_cause: none}\n";
}

TEST(TestFileLimits, AliasBombIsRefusedUnderAOneGibAddressSpaceLimit) {
  for (const std::string use : {"    discovery: *i", "    input_series: *i", "    baseline_facts: {x: *i}"}) {
    SCOPED_TRACE(use);
    const fs::path file = fs::temp_directory_path() / ("alias-bomb-" + std::to_string(getpid()) + ".test.yaml");
    std::ofstream(file) << AliasBomb(use);
    ASSERT_LT(fs::file_size(file), 1000u);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // AddressSanitizer maps terabytes of shadow address space up front, so an address-space
      // limit only applies to the plain build; the sanitized one still proves the refusal.
      if (!kAddressSanitizer) {
        rlimit limit{1ull << 30, 1ull << 30};
        setrlimit(RLIMIT_AS, &limit);
      }
      auto results = RunTestFile(file.string(), TestRunOptions{});
      // Exit 0 only for a clean refusal that names the limit.
      const bool refused = results.size() == 1 && !results[0].passed && !results[0].failures.empty() &&
                           results[0].failures[0].find("exceeds the limit yaml.nodes") != std::string::npos;
      _exit(refused ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    fs::remove(file);
    ASSERT_TRUE(WIFEXITED(status)) << "the runner died (signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << ")";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "not refused with the limit named";
  }
}

}  // namespace
}  // namespace diagnose::dag
