// Slurm as the oracle for the engine's hostlists (issue 37): random expressions expanded by
// `scontrol show hostnames` and by ExpandHostlist must agree host for host (or both refuse), the
// engine's CompressHostlist must expand back under Slurm to the same hosts, and what Slurm itself
// compresses (`scontrol show hostlist`, the form SLURM_JOB_NODELIST takes) the engine must read.
// scontrol needs a slurm.conf but no running controller. Skipped where scontrol is not installed
// (scripts/install-deps.sh installs slurm-client).
//
// DIAGNOSE_HOSTLIST_SEED=N replays another random draw; a difference prints the seed and the case.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include <unistd.h>

#include "engine/core/subprocess.h"
#include "engine/triage/hostlist.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;

constexpr int kCases = 1000;
constexpr char kSeparatorHost[] = "oracle-separator-host";

// A private slurm.conf: scontrol reads the cluster's configuration before anything else and
// would otherwise look for a controller in DNS.
class SlurmConf {
 public:
  SlurmConf() {
    char tmpl[] = "/tmp/diagnose-hostlist-oracle-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return;
    dir_ = tmpl;
    std::ofstream(dir_ / "slurm.conf") << "ClusterName=oracle\nSlurmctldHost=localhost\n"
                                          "NodeName=localhost CPUs=1 State=UNKNOWN\n"
                                          "PartitionName=oracle Nodes=ALL Default=YES\n";
  }
  ~SlurmConf() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  std::string path() const { return dir_.empty() ? "" : (dir_ / "slurm.conf").string(); }

 private:
  fs::path dir_;
};

// Runs scontrol with its output in a file (a range near Slurm's limit prints 65,536 lines, more
// than RunCommand keeps); the output, or nullopt with a test failure when it did not run.
std::optional<std::string> Scontrol(const std::vector<std::string>& args) {
  static int serial = 0;
  const fs::path out = fs::temp_directory_path() /
                       ("diagnose-hostlist-oracle-" + std::to_string(getpid()) + "-" + std::to_string(++serial));
  SpawnOptions options;
  options.argv = {"scontrol"};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.stdout_path = out.string();
  options.stderr_path = out.string();
  auto child = ChildProcess::Spawn(options);
  std::optional<std::string> text;
  if (!child.ok()) {
    ADD_FAILURE() << "scontrol did not start: " << child.status().ToString();
  } else if (auto code = child->Wait(std::chrono::seconds(60)); !code.ok()) {
    ADD_FAILURE() << "scontrol " << args.back().substr(0, 200) << ": " << code.status().ToString();
  } else {
    std::ifstream in(out);
    text = std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::error_code ec;
  fs::remove(out, ec);
  return text;
}

// `scontrol show hostnames EXPR`: the hosts, or nullopt where Slurm refuses the expression (it
// prints "Invalid hostlist: ..." and still exits 0).
std::optional<std::vector<std::string>> SlurmExpand(const std::string& expr) {
  auto output = Scontrol({"show", "hostnames", expr});
  if (!output) return std::nullopt;
  std::vector<std::string> hosts;
  std::istringstream lines(*output);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("Invalid hostlist") || line.starts_with("scontrol: error")) return std::nullopt;
    if (!line.empty()) hosts.push_back(line);
  }
  return hosts;
}

// Expands many valid expressions with one scontrol run, a separator host between them; a batch
// Slurm refuses as a whole is expanded case by case so the refused one shows.
std::vector<std::optional<std::vector<std::string>>> SlurmExpandAll(const std::vector<std::string>& exprs) {
  std::vector<std::optional<std::vector<std::string>>> out;
  constexpr size_t kBatch = 50;
  for (size_t begin = 0; begin < exprs.size(); begin += kBatch) {
    const size_t end = std::min(exprs.size(), begin + kBatch);
    std::string joined;
    for (size_t i = begin; i < end; ++i) joined += exprs[i] + " " + kSeparatorHost + " ";
    auto all = SlurmExpand(joined);
    std::vector<std::vector<std::string>> split(1);
    if (all)
      for (const auto& h : *all) {
        if (h == kSeparatorHost) split.emplace_back();
        else split.back().push_back(h);
      }
    if (all && split.size() == end - begin + 1) {
      for (size_t i = 0; i + 1 < split.size(); ++i) out.push_back(split[i]);
    } else {
      for (size_t i = begin; i < end; ++i) out.push_back(SlurmExpand(exprs[i]));
    }
  }
  return out;
}

std::string Joined(const std::optional<std::vector<std::string>>& hosts) {
  if (!hosts) return "(refused)";
  std::string s;
  for (const auto& h : *hosts) s += (s.empty() ? "" : " ") + h;
  return s.size() > 400 ? s.substr(0, 400) + "..." : s;
}

std::vector<std::string> SortedUnique(std::vector<std::string> hosts) {
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  return hosts;
}

// Random hostlists in the shapes clusters use (prefixes ending in digits, zero padding, several
// bracket groups, dashes between them) plus the mistakes Slurm refuses (text after the last
// bracket, descending, empty or oversized ranges, letters in a range). Stray brackets, whitespace
// inside brackets and numbers beyond 18 digits are left out: Slurm turns those into host names no
// cluster has, where the engine refuses (tests/triage/hostlist_test.cc).
class HostlistGenerator {
 public:
  explicit HostlistGenerator(uint32_t seed) : rng_(seed) {}

  std::string Expression() {
    std::string expr;
    const int tokens = Pick(1, 3);
    for (int t = 0; t < tokens; ++t) {
      if (t > 0) expr += Chance(0.1) ? " " : Chance(0.05) ? ",," : ",";
      expr += Chance(0.02) ? RangeAtSlurmsLimit() : Chance(0.25) ? PlainHost() : BracketToken();
    }
    if (Chance(0.03)) expr += ",";
    return expr;
  }

  std::vector<std::string> HostSet() {
    std::vector<std::string> hosts;
    const int groups = Pick(1, 4);
    for (int g = 0; g < groups; ++g) {
      const std::string prefix = Prefix();
      const int count = Pick(1, 40);
      const int base = Pick(0, 2) == 0 ? Pick(0, 20) : Pick(0, 5000);
      const size_t width = Chance(0.5) ? 0 : static_cast<size_t>(Pick(1, 6));
      for (int i = 0; i < count; ++i) {
        const int number = base + (Chance(0.7) ? i : Pick(0, 300));
        std::string digits = std::to_string(number);
        if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
        hosts.push_back(prefix + digits);
      }
      if (Chance(0.15)) hosts.push_back(PlainHost());
      if (Chance(0.1)) hosts.push_back(prefix + std::to_string(Pick(0, 99)) + Pick({"x", "-ib", "a"}));
    }
    std::shuffle(hosts.begin(), hosts.end(), rng_);
    return hosts;
  }

 private:
  int Pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  std::string Pick(std::initializer_list<const char*> options) {
    return *(options.begin() + Pick(0, static_cast<int>(options.size()) - 1));
  }

  std::string Prefix() {
    std::string p = Pick({"chi", "node", "gpu-b", "x1000c2s", "rk-node-", "mi355-r", "n", "tc-r4n", "", "a1b"});
    if (Chance(0.3)) p += std::to_string(Pick(0, 12)) + Pick({"", "-", "n", "-u"});
    return p;
  }

  std::string PlainHost() {
    std::string h = Prefix();
    if (h.empty() || Chance(0.7)) h += std::to_string(Pick(0, 3000));
    if (Chance(0.1)) h += Pick({"-ib", "x", "login"});
    return h;
  }

  std::string Number(int value, size_t width) {
    std::string digits = std::to_string(value);
    if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
    return digits;
  }

  std::string Range() {
    const size_t width = Chance(0.5) ? 0 : static_cast<size_t>(Pick(1, 5));
    const int lo = Chance(0.5) ? Pick(0, 12) : Pick(0, 3000);
    const double roll = std::uniform_real_distribution<double>(0, 1)(rng_);
    if (roll < 0.35) return Number(lo, width);
    if (roll < 0.90) return Number(lo, width) + "-" + Number(lo + Pick(0, 15), Chance(0.2) ? Pick(0, 5) : 0);
    if (roll < 0.93) return Number(lo + Pick(1, 9), width) + "-" + Number(lo, 0);   // descending
    if (roll < 0.95) return Number(lo, width) + "-";                                  // Slurm: lo only
    if (roll < 0.97) return "";                                                       // empty item
    if (roll < 0.98) return Number(lo, width) + "--" + Number(lo + 1, 0);
    if (roll < 0.99) return Number(lo, width) + "a";
    return "-" + Number(lo, 0);
  }

  // Slurm refuses a range of more than 65,536 hosts; alone in its token so the answer stays small.
  std::string RangeAtSlurmsLimit() {
    const int lo = Pick(0, 2);
    return Prefix() + "[" + std::to_string(lo) + "-" + std::to_string(lo + Pick(65534, 65537)) + "]";
  }

  std::string BracketToken() {
    std::string token = Prefix();
    const int groups = Chance(0.7) ? 1 : Pick(2, 3);
    for (int g = 0; g < groups; ++g) {
      std::string body;
      const int items = Pick(1, 3);
      for (int i = 0; i < items; ++i) body += (i ? "," : "") + Range();
      token += "[" + body + "]";
      if (g + 1 < groups) token += Pick({"", "-", "-n", "s", "b0n"});
    }
    if (Chance(0.05)) token += Pick({"x", "-ib", "0"});   // text after the last bracket
    return token;
  }

  std::mt19937 rng_;
};

class SlurmHostlistOracle : public ::testing::Test {
 protected:
  void SetUp() override {
    if (FindExecutable("scontrol").empty()) GTEST_SKIP() << "scontrol not installed (apt-get install slurm-client)";
    ASSERT_FALSE(conf_.path().empty()) << "cannot create a temp dir for slurm.conf";
    setenv("SLURM_CONF", conf_.path().c_str(), 1);
    if (const char* s = std::getenv("DIAGNOSE_HOSTLIST_SEED")) seed_ = static_cast<uint32_t>(std::strtoul(s, nullptr, 10));
    auto probe = SlurmExpand("oracle[1-2]");
    if (!probe || *probe != std::vector<std::string>{"oracle1", "oracle2"})
      GTEST_SKIP() << "scontrol cannot expand a hostlist here: " << Joined(probe);
  }

  SlurmConf conf_;
  uint32_t seed_ = 37;
};

TEST_F(SlurmHostlistOracle, ExpansionAgreesWithScontrol) {
  HostlistGenerator gen(seed_);
  std::vector<std::string> exprs;
  for (int i = 0; i < kCases; ++i) exprs.push_back(gen.Expression());
  std::vector<std::string> engine_valid;
  std::vector<std::optional<std::vector<std::string>>> engine(exprs.size());
  for (size_t i = 0; i < exprs.size(); ++i) {
    // The engine's own bound on a list (100,000 hosts by default) is not what is compared here.
    auto r = ExpandHostlist(exprs[i], 1000000);
    if (r.ok()) engine[i] = *r;
  }
  std::vector<std::string> valid_exprs, refused_exprs;
  for (size_t i = 0; i < exprs.size(); ++i) (engine[i] ? valid_exprs : refused_exprs).push_back(exprs[i]);
  auto slurm_valid = SlurmExpandAll(valid_exprs);
  int differences = 0, refused_by_both = 0;
  for (size_t i = 0, v = 0; i < exprs.size(); ++i) {
    const auto slurm = engine[i] ? slurm_valid[v++] : SlurmExpand(exprs[i]);
    if (!slurm && !engine[i]) ++refused_by_both;
    if (slurm != engine[i]) {
      ++differences;
      ADD_FAILURE() << "seed " << seed_ << " case " << i << ": '" << exprs[i] << "'\n  slurm:  " << Joined(slurm)
                    << "\n  engine: " << Joined(engine[i]);
    }
  }
  EXPECT_EQ(differences, 0) << "of " << exprs.size() << " expressions";
  // The draw must exercise both sides: expressions Slurm reads and expressions it refuses.
  EXPECT_GT(refused_by_both, 20);
  EXPECT_GT(static_cast<int>(valid_exprs.size()), kCases / 2);
  RecordProperty("expressions", kCases);
  RecordProperty("refused_by_both", refused_by_both);
}

TEST_F(SlurmHostlistOracle, EngineCompressionExpandsBackUnderSlurm) {
  HostlistGenerator gen(seed_ + 1);
  std::vector<std::vector<std::string>> sets;
  std::vector<std::string> compressed;
  for (int i = 0; i < kCases; ++i) {
    sets.push_back(gen.HostSet());
    compressed.push_back(CompressHostlist(sets.back()));
  }
  auto slurm = SlurmExpandAll(compressed);
  int differences = 0;
  for (size_t i = 0; i < sets.size(); ++i) {
    const auto want = SortedUnique(sets[i]);
    if (!slurm[i] || SortedUnique(*slurm[i]) != want || slurm[i]->size() != want.size()) {
      ++differences;
      ADD_FAILURE() << "seed " << seed_ + 1 << " set " << i << " compressed to '" << compressed[i]
                    << "'\n  slurm reads: " << Joined(slurm[i]) << "\n  hosts:       " << Joined(want);
    }
  }
  EXPECT_EQ(differences, 0) << "of " << sets.size() << " host sets";
}

TEST_F(SlurmHostlistOracle, EngineReadsWhatSlurmCompresses) {
  HostlistGenerator gen(seed_ + 2);
  int differences = 0;
  constexpr int kSlurmCompressed = 200;   // one scontrol run each: Slurm's compression cannot be batched
  for (int i = 0; i < kSlurmCompressed; ++i) {
    std::string listed;
    for (const auto& h : gen.HostSet()) listed += (listed.empty() ? "" : ",") + h;
    auto output = Scontrol({"show", "hostlist", listed});
    ASSERT_TRUE(output.has_value());
    std::string slurm_compressed = *output;
    while (!slurm_compressed.empty() && slurm_compressed.back() == '\n') slurm_compressed.pop_back();
    const auto slurm = SlurmExpand(slurm_compressed);
    auto engine = ExpandHostlist(slurm_compressed);
    const std::optional<std::vector<std::string>> mine =
        engine.ok() ? std::optional<std::vector<std::string>>(*engine) : std::nullopt;
    if (!slurm || mine != slurm) {
      ++differences;
      ADD_FAILURE() << "seed " << seed_ + 2 << " set " << i << ": slurm compressed '" << listed << "' to '"
                    << slurm_compressed << "'\n  slurm reads:  " << Joined(slurm) << "\n  engine reads: " << Joined(mine)
                    << (engine.ok() ? "" : " " + engine.status().ToString());
    }
  }
  EXPECT_EQ(differences, 0) << "of " << kSlurmCompressed << " Slurm-compressed lists";
}

}  // namespace
}  // namespace diagnose
