#include "engine/tsdb/private_prometheus.h"

#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/tsdb/promql_escape.h"
#include "engine/tsdb/web_auth.h"
#include "tests/tsdb/tsdb_fixture.h"

namespace diagnose {
namespace {

namespace fs = std::filesystem;
using testing::MakeTempDir;
using testing::PrometheusChildrenOf;
using testing::SharedJobFixture;

// Helper mode: the test binary re-invoked with DIAGNOSE_PRIVATE_PROM_HELPER="<tsdb>|<temp root>|<ready file>"
// starts a private Prometheus, reports it, and waits to be signalled. Runs before gtest's main.
const bool kHelperMode = [] {
  const char* spec = std::getenv("DIAGNOSE_PRIVATE_PROM_HELPER");
  if (!spec) return false;
  InstallTerminationHandler();
  std::string s = spec;
  const size_t a = s.find('|'), b = s.find('|', a + 1);
  PrivatePrometheusOptions options;
  options.temp_root = s.substr(a + 1, b - a - 1);
  auto server = PrivatePrometheus::Start(s.substr(0, a), options);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    _exit(3);
  }
  {
    std::ofstream ready(s.substr(b + 1) + ".tmp");
    ready << (*server)->pid() << " " << (*server)->copy_dir() << "\n";
  }
  fs::rename(s.substr(b + 1) + ".tmp", s.substr(b + 1));
  while (true) pause();
}();

double EndOf(const TsdbInventory& inv) { return (inv.max_time_ms() - 1) / 1000.0; }

int CountCopies(const std::string& root) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(root)) {
    if (e.path().filename().string().rfind(kPrivateCopyPrefix, 0) == 0) ++n;
  }
  return n;
}

class PrivatePrometheusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    temp_root_ = MakeTempDir("private-prom-root-");
    options_.temp_root = temp_root_;
  }
  void TearDown() override {
    EXPECT_TRUE(PrometheusChildrenOf(getpid()).empty()) << "a prometheus child was left running";
    EXPECT_EQ(CountCopies(temp_root_), 0) << "a private copy was left behind";
    fs::remove_all(temp_root_);
  }
  std::string temp_root_;
  PrivatePrometheusOptions options_;
};

TEST(ListeningPortInLog, ReadsTheLoopbackPortOnceTheServerSaidIt) {
  EXPECT_EQ(ListeningPortInLog(""), std::nullopt);
  EXPECT_EQ(ListeningPortInLog("ts=2026-11-28T00:00:00Z caller=main.go msg=\"Starting Prometheus\"\n"), std::nullopt);
  EXPECT_EQ(ListeningPortInLog("ts=... caller=web.go level=info component=web msg=\"Start listening for connections\" "
                               "address=127.0.0.1:0\nts=... caller=tls_config.go level=info msg=\"Listening on\" "
                               "address=127.0.0.1:43715\n"),
            43715);
  // Another interface is not the loopback the server was told to use.
  EXPECT_EQ(ListeningPortInLog("msg=\"Listening on\" address=0.0.0.0:9090\n"), std::nullopt);
}

TEST(PrivateServerGoMemory, TheSoftLimitIsWhatTheBudgetLeavesBesideTheServedBlocks) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  EXPECT_EQ(PrivateServerGoMemory(0).memory_limit_bytes, 1024 * kMiB);
  EXPECT_EQ(PrivateServerGoMemory(337 * kMiB).memory_limit_bytes, 687 * kMiB);
  EXPECT_EQ(PrivateServerGoMemory(512 * kMiB).memory_limit_bytes, 512 * kMiB);
  // A long job's blocks alone (nearly) fill the budget: the heap keeps its 512 MiB, the blocks'
  // pages are what the kernel drops first.
  EXPECT_EQ(PrivateServerGoMemory(513 * kMiB).memory_limit_bytes, 512 * kMiB);
  EXPECT_EQ(PrivateServerGoMemory(863 * kMiB).memory_limit_bytes, 512 * kMiB);
  EXPECT_EQ(PrivateServerGoMemory(1024 * kMiB).memory_limit_bytes, 512 * kMiB);
  // Blocks beyond the whole budget: it cannot hold, so the heap gets all of it, not a GC spin.
  EXPECT_EQ(PrivateServerGoMemory(1025 * kMiB).memory_limit_bytes, 1024 * kMiB);
  EXPECT_EQ(PrivateServerGoMemory(int64_t{40} << 30).memory_limit_bytes, 1024 * kMiB);
  EXPECT_EQ(PrivateServerGoMemory(-1).memory_limit_bytes, 1024 * kMiB);
  EXPECT_EQ(PrivateServerGoMemory(337 * kMiB).gogc, 400);
}

// What the server was started with, as its /proc/PID/environ says: NAME -> value.
std::map<std::string, std::string> EnvironmentOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::map<std::string, std::string> env;
  for (std::string entry; std::getline(in, entry, '\0');) {
    const size_t eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

TEST_F(PrivatePrometheusTest, TheServerGetsTheGoMemorySettingsOfItsBlocksUnlessTheEnvironmentSetsThem) {
  const auto& job = SharedJobFixture();
  for (const char* name : {"GOGC", "GOMEMLIMIT"})
    if (std::getenv(name)) GTEST_SKIP() << name << " is set in this environment, so it is what the server gets";
  auto server = PrivatePrometheus::Start(job.tsdb_dir, options_);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto& prom = **server;
  int64_t block_bytes = 0;
  for (const auto& block : prom.inventory().blocks)
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(job.tsdb_dir) / block.ulid))
      if (entry.is_regular_file() && (entry.path().filename() == "index" || entry.path().parent_path().filename() == "chunks"))
        block_bytes += static_cast<int64_t>(entry.file_size());
  ASSERT_GT(block_bytes, 0) << "the shared fixture job has completed blocks";
  EXPECT_EQ(prom.served_block_bytes(), block_bytes);
  const auto env = EnvironmentOf(prom.pid());
  EXPECT_EQ(env.count("GOGC") ? env.at("GOGC") : "", "400");
  EXPECT_EQ(env.count("GOMEMLIMIT") ? env.at("GOMEMLIMIT") : "",
            std::to_string(PrivateServerGoMemory(block_bytes).memory_limit_bytes));
}

TEST_F(PrivatePrometheusTest, AUsersOwnGoMemoryLimitWins) {
  const auto& job = SharedJobFixture();
  const char* own = std::getenv("GOMEMLIMIT");
  const std::string saved = own ? own : "";
  setenv("GOMEMLIMIT", "300MiB", 1);
  auto server = PrivatePrometheus::Start(job.tsdb_dir, options_);
  if (own) setenv("GOMEMLIMIT", saved.c_str(), 1);
  else unsetenv("GOMEMLIMIT");
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const auto env = EnvironmentOf((*server)->pid());
  EXPECT_EQ(env.count("GOMEMLIMIT") ? env.at("GOMEMLIMIT") : "", "300MiB");
}

TEST_F(PrivatePrometheusTest, ServesTheSnapshotAndNeverWritesTheJobDir) {
  const auto& job = SharedJobFixture();
  const std::string before = testing::DirectoryFingerprint(job.job_dir);
  {
    auto server = PrivatePrometheus::Start(job.tsdb_dir, options_);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    auto& prom = **server;
    EXPECT_GT(prom.startup_seconds(), 0);
    EXPECT_EQ(CountCopies(temp_root_), 1);
    EXPECT_EQ(PrometheusChildrenOf(getpid()).size(), 1u);
    const double end = EndOf(prom.inventory());
    auto r = prom.client().Run(Query::Instant("count(hw_gpu_power_watts)", end));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->series.size(), 1u);
    EXPECT_EQ(r->series[0].samples[0].v, 24 * 8);
    auto hosts = prom.client().LabelValues("host", {}, prom.inventory().min_time_ms() / 1000.0, end);
    ASSERT_TRUE(hosts.ok());
    EXPECT_EQ(hosts->size(), 24u);
    // A range over the whole data with a 0.1 s step would be 72,000 points: the client clamps it.
    auto range = prom.client().Run(Query::Range("max(hw_scrape_duration_seconds)",
                                                prom.inventory().min_time_ms() / 1000.0, end, 0.1));
    ASSERT_TRUE(range.ok()) << range.status().ToString();
    EXPECT_LE(range->series[0].samples.size(), 11001u);
    EXPECT_GE(range->effective_step, 1);
    EXPECT_NE(prom.client().Describe().find(job.tsdb_dir), std::string::npos);
  }
  EXPECT_EQ(testing::DirectoryFingerprint(job.job_dir), before);
}

// Another user of a shared login node can reach the loopback port, but not the job's metrics: every
// request without the run's secret is refused.
TEST_F(PrivatePrometheusTest, ThePortRefusesRequestsWithoutTheRunsSecret) {
  const auto& job = SharedJobFixture();
  auto server = PrivatePrometheus::Start(job.tsdb_dir, options_);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto& prom = **server;
  auto client_with = [&](std::map<std::string, std::string> headers) {
    RemoteEndpointOptions o;
    o.url = prom.url();
    o.headers = std::move(headers);
    o.max_retries = 0;
    auto c = HttpQueryClient::Create(o, "test");
    EXPECT_TRUE(c.ok());
    return std::move(c).value();
  };
  auto anonymous = client_with({});
  for (const char* path : {"/api/v1/query?query=up", "/api/v1/label/__name__/values", "/-/ready", "/metrics", "/graph"}) {
    auto r = anonymous->Get(path, 5);
    ASSERT_TRUE(r.ok()) << path << ": " << r.status().ToString();
    EXPECT_EQ(r->http_code, 401) << path;
  }
  auto wrong = client_with({{"Authorization", BasicAuthorization("diagnose", std::string(64, '0'))}});
  EXPECT_EQ(wrong->Get("/api/v1/query?query=up", 5)->http_code, 401);
  // The run's own client is let in ...
  EXPECT_TRUE(prom.client().Run(Query::Instant("count(hw_gpu_power_watts)", EndOf(prom.inventory()))).ok());
  // ... and the secret lives only in the run's 0700 temp dir, readable by its owner alone.
  const auto web = fs::path(prom.copy_dir()) / "web.yml";
  ASSERT_TRUE(fs::exists(web));
  EXPECT_EQ(fs::status(web).permissions() & (fs::perms::group_all | fs::perms::others_all), fs::perms::none);
  EXPECT_EQ(fs::status(prom.copy_dir()).permissions() & (fs::perms::group_all | fs::perms::others_all), fs::perms::none);
}

// Job outputs on NFS, temp dir local: hard links fail with EXDEV. Completed blocks are then served
// through per-file symlinks to their chunks and index (never written by Prometheus), so nothing of
// size is copied, and the job's files stay byte-identical. /dev/shm is the other filesystem here.
TEST_F(PrivatePrometheusTest, BlocksOnAnotherFilesystemAreServedThroughSymlinksNotCopied) {
  const auto& job = SharedJobFixture();
  struct stat job_st {}, shm_st {};
  if (stat(job.tsdb_dir.c_str(), &job_st) != 0 || stat("/dev/shm", &shm_st) != 0 || job_st.st_dev == shm_st.st_dev)
    GTEST_SKIP() << "no second filesystem (/dev/shm) next to " << job.tsdb_dir;
  const std::string other_root = MakeTempDir("/dev/shm/private-prom-xfs-");   // absolute prefix
  ASSERT_FALSE(other_root.empty());
  PrivatePrometheusOptions options = options_;
  options.temp_root = other_root;
  options.blocks_only = true;   // the fixture's WAL would be copied (it is written in place)
  const std::string before = testing::DirectoryFingerprint(job.job_dir);
  int64_t block_bytes = 0;
  for (const auto& e : fs::recursive_directory_iterator(job.tsdb_dir))
    if (e.is_regular_file() && e.path().string().find("/wal") == std::string::npos) block_bytes += e.file_size();
  {
    auto server = PrivatePrometheus::Start(job.tsdb_dir, options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    auto& prom = **server;
    EXPECT_EQ(prom.linked_files(), 0);
    EXPECT_GT(prom.symlinked_files(), 0);
    // Only meta.json and tombstones are copied: well under 1 % of the blocks.
    EXPECT_LT(prom.copied_bytes() * 100, block_bytes) << prom.copied_bytes() << " of " << block_bytes;
    for (const auto& e : fs::recursive_directory_iterator(prom.copy_dir()))
      if (fs::is_symlink(e.symlink_status())) {
        const auto to = fs::read_symlink(e.path()).string();
        EXPECT_EQ(to.rfind(job.tsdb_dir, 0), 0u) << to;   // only into the job's own TSDB
      }
    auto r = prom.client().Run(Query::Instant("count(hw_gpu_power_watts)", EndOf(prom.inventory())));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->series.size(), 1u);
    EXPECT_EQ(r->series[0].samples[0].v, 24 * 8);
  }
  EXPECT_EQ(testing::DirectoryFingerprint(job.job_dir), before);
  EXPECT_EQ(CountCopies(other_root), 0);
  fs::remove_all(other_root);
}

// A TSDB dir that also holds an older job's block (a shared or reused directory): the server
// gets the job's own blocks only, and answers about the job as it does without the older block.
TEST_F(PrivatePrometheusTest, AnOlderJobsBlockIsNeitherCopiedNorServed) {
  const auto& job = SharedJobFixture();
  const std::string snapshot = MakeTempDir("private-prom-shared-");
  fs::copy(job.tsdb_dir, snapshot, fs::copy_options::recursive);
  auto inventory = InspectTsdbDir(snapshot);
  ASSERT_TRUE(inventory.ok()) << inventory.status().ToString();
  ASSERT_FALSE(inventory->blocks.empty());
  const std::string older = "01AAAAAAAAAAAAAAAAAAAAAAAA";
  fs::copy(fs::path(snapshot) / inventory->blocks.front().ulid, fs::path(snapshot) / older, fs::copy_options::recursive);
  const int64_t shift_ms = int64_t{400} * 86400 * 1000;
  {
    const std::string meta_path = (fs::path(snapshot) / older / "meta.json").string();
    nlohmann::json meta = nlohmann::json::parse(std::ifstream(meta_path));
    meta["ulid"] = older;
    meta["minTime"] = meta["minTime"].get<int64_t>() - shift_ms;
    meta["maxTime"] = meta["maxTime"].get<int64_t>() - shift_ms;
    std::ofstream(meta_path) << meta.dump();
  }
  const double end = EndOf(*inventory);
  PrivatePrometheusOptions options = options_;
  options.logged_run = {.end = end, .length_seconds = end - inventory->min_time_ms() / 1000.0};
  const std::string before = testing::DirectoryFingerprint(snapshot);
  {
    auto server = PrivatePrometheus::Start(snapshot, options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    EXPECT_EQ((*server)->unserved_blocks(), std::vector<std::string>{older});
    EXPECT_FALSE(fs::exists(fs::path((*server)->copy_dir()) / "data" / older));
    EXPECT_TRUE(fs::exists(fs::path((*server)->copy_dir()) / "data" / inventory->blocks.front().ulid));
    auto r = (*server)->client().Run(Query::Instant("count(hw_gpu_power_watts)", end));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->series.size(), 1u);
    EXPECT_EQ(r->series[0].samples[0].v, 24 * 8);
  }
  // Without the run's length nothing places the older block outside: it is served, as before.
  options.logged_run.length_seconds.reset();
  {
    auto server = PrivatePrometheus::Start(snapshot, options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    EXPECT_TRUE((*server)->unserved_blocks().empty());
  }
  EXPECT_EQ(testing::DirectoryFingerprint(snapshot), before);
  fs::remove_all(snapshot);
}

TEST(WebAuthTest, CredentialsAreFreshBcryptAndTheHeaderIsRfc7617) {
  auto a = NewWebCredentials(), b = NewWebCredentials();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->password.size(), 64u);
  EXPECT_NE(a->password, b->password);
  EXPECT_EQ(a->bcrypt_hash.rfind("$2b$04$", 0), 0u) << a->bcrypt_hash;
  EXPECT_EQ(BasicAuthorization("Aladdin", "open sesame"), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
  EXPECT_EQ(BasicAuthorization("a", "b"), "Basic YTpi");
  EXPECT_NE(WebConfigYaml(*a).find("basic_auth_users:\n  diagnose: \"$2b$"), std::string::npos);
}

TEST_F(PrivatePrometheusTest, SyntaxErrorCarriesTheQuery) {
  auto server = PrivatePrometheus::Start(SharedJobFixture().tsdb_dir, options_);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto r = (*server)->client().Run(Query::Instant("sum by (host (hw_gpu_power_watts)", EndOf((*server)->inventory())));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("sum by (host (hw_gpu_power_watts)"), std::string::npos);
  EXPECT_NE(r.status().message().find("parse error"), std::string::npos) << r.status().message();
}

TEST_F(PrivatePrometheusTest, HostnamesWithRegexMetacharactersMatchOnlyThemselves) {
  testing::ScopedTempDir job_scope("private-prom-meta-");
  const std::string& job = job_scope.path;
  testing::FixtureSpec spec;
  spec.hosts = {"node1.a", "node1xa", "node+2", "node2", "r\"q\\"};
  spec.duration_seconds = 600;
  ASSERT_TRUE(testing::BuildJobTsdb(spec, job + "/prometheus").ok());
  {
    auto server = PrivatePrometheus::Start(job + "/prometheus", options_);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    const double end = EndOf((*server)->inventory());
    auto count = [&](const std::string& promql) {
      auto r = (*server)->client().Run(Query::Instant(promql, end));
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      return r.ok() && !r->series.empty() ? r->series[0].samples[0].v : 0.0;
    };
    EXPECT_EQ(count("count(hw_scrape_duration_seconds{host=~\"" + PromqlAlternation({"node1.a", "node+2"}) + "\"})"), 2);
    EXPECT_EQ(count("count(hw_scrape_duration_seconds{host=\"" + EscapePromqlString("r\"q\\") + "\"})"), 1);
    EXPECT_EQ(count("count(hw_scrape_duration_seconds{host=~\"" + EscapePromqlRegexLiteral("r\"q\\") + "\"})"), 1);
  }
  fs::remove_all(job);
}

TEST_F(PrivatePrometheusTest, MissingOrEmptyDirIsAClearError) {
  auto missing = PrivatePrometheus::Start(temp_root_ + "/nope/prometheus", options_);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("nope/prometheus"), std::string::npos);
  testing::ScopedTempDir empty_scope("private-prom-empty-");
  const std::string& empty = empty_scope.path;
  auto none = PrivatePrometheus::Start(empty, options_);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find(empty), std::string::npos);
  EXPECT_NE(none.status().message().find("never"), std::string::npos);
  fs::remove_all(empty);
}

TEST_F(PrivatePrometheusTest, ServerThatCannotStartLeavesNothingBehind) {
  options_.prometheus_binary = "false";  // exits at once, like a prometheus that rejects its flags
  auto server = PrivatePrometheus::Start(SharedJobFixture().tsdb_dir, options_);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(server.status().message().find("exited with code 1"), std::string::npos) << server.status().message();
}

TEST_F(PrivatePrometheusTest, LiveTsdbIsRefusedWithTheFallbacksAndBlocksOnlyWorks) {
  testing::ScopedTempDir job_scope("private-prom-live-");
  const std::string& job = job_scope.path;
  const std::string tsdb = job + "/prometheus";
  fs::copy(SharedJobFixture().tsdb_dir, tsdb, fs::copy_options::recursive);
  fs::create_directories(tsdb + "/wal");
  std::ofstream(tsdb + "/wal/00000003") << std::string(100, '\0');  // written just now
  auto refused = PrivatePrometheus::Start(tsdb, options_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("blocks-only"), std::string::npos);
  EXPECT_NE(refused.status().message().find("--prometheus"), std::string::npos);
  options_.blocks_only = true;
  {
    auto server = PrivatePrometheus::Start(tsdb, options_);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    ASSERT_EQ((*server)->caveats().size(), 1u);
    EXPECT_NE((*server)->caveats()[0].find("~2 h"), std::string::npos);
    EXPECT_FALSE(fs::exists((*server)->copy_dir() + "/data/wal/00000003"));
  }
  fs::remove_all(job);
}

TEST_F(PrivatePrometheusTest, HeldLockMeansLive) {
  testing::ScopedTempDir job_scope("private-prom-lock-");
  const std::string& job = job_scope.path;
  fs::copy(SharedJobFixture().tsdb_dir, job, fs::copy_options::recursive);
  std::ofstream(job + "/lock") << "";
  auto inv = InspectTsdbDir(job);
  ASSERT_TRUE(inv.ok());
  EXPECT_FALSE(inv->lock_held);  // a stale lock of a dead Prometheus does not count
  int fd = open((job + "/lock").c_str(), O_RDONLY);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  // flock is per open file description: probing from this process through a new open() conflicts.
  inv = InspectTsdbDir(job);
  ASSERT_TRUE(inv.ok());
  EXPECT_TRUE(inv->lock_held);
  EXPECT_EQ(CheckNotLive(*inv, 120).code(), StatusCode::kFailedPrecondition);
  close(fd);
  fs::remove_all(job);
}

TEST_F(PrivatePrometheusTest, SymlinksInTheSnapshotAreNotFollowed) {
  testing::ScopedTempDir outside_scope("private-prom-outside-");
  const std::string& outside = outside_scope.path;
  testing::FixtureSpec spec;
  spec.hosts = {"elsewhere"};
  spec.duration_seconds = 600;
  ASSERT_TRUE(testing::BuildJobTsdb(spec, outside).ok());
  testing::ScopedTempDir job_scope("private-prom-links-");
  const std::string& job = job_scope.path;
  const std::string tsdb = job + "/prometheus";
  fs::copy(SharedJobFixture().tsdb_dir, tsdb, fs::copy_options::recursive);
  auto outside_blocks = ListBlockDirs(outside);
  ASSERT_TRUE(outside_blocks.ok());
  fs::create_directory_symlink(outside + "/" + outside_blocks->front().ulid, tsdb + "/" + outside_blocks->front().ulid);
  auto own = ListBlockDirs(tsdb);
  ASSERT_TRUE(own.ok());
  fs::create_symlink("/etc/passwd", tsdb + "/" + own->front().ulid + "/passwd");
  {
    auto server = PrivatePrometheus::Start(tsdb, options_);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    EXPECT_EQ((*server)->inventory().ignored.size(), 1u);
    // Each skipped entry is said: the linked block dir at the top, the file linked inside a block.
    std::string caveats;
    for (const auto& c : (*server)->caveats()) caveats += c + "\n";
    EXPECT_NE(caveats.find("/" + outside_blocks->front().ulid + " is a symlink and was not followed"), std::string::npos)
        << caveats;
    EXPECT_NE(caveats.find("1 symlink(s) inside"), std::string::npos) << caveats;
    auto hosts = (*server)->client().LabelValues("host", {}, 0, 4102444800.0);
    ASSERT_TRUE(hosts.ok());
    EXPECT_EQ(std::count(hosts->begin(), hosts->end(), "elsewhere"), 0);
    EXPECT_FALSE(fs::exists((*server)->copy_dir() + "/data/" + own->front().ulid + "/passwd"));
  }
  fs::remove_all(job);
  fs::remove_all(outside);
}

TEST_F(PrivatePrometheusTest, PrometheusKilledMidRunGivesUnavailable) {
  auto server = PrivatePrometheus::Start(SharedJobFixture().tsdb_dir, options_);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  ASSERT_TRUE((*server)->Health().ok());
  kill((*server)->pid(), SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto r = (*server)->client().Run(Query::Instant("up", EndOf((*server)->inventory())));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  Status health = (*server)->Health();
  EXPECT_EQ(health.code(), StatusCode::kUnavailable);
  EXPECT_NE(health.message().find("exited with code 137"), std::string::npos) << health.message();
}

TEST_F(PrivatePrometheusTest, StaleCopiesOfDeadRunsAreRemoved) {
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  fs::create_directories(temp_root_ + "/diagnose-prom-dead01/data");
  std::ofstream(temp_root_ + "/diagnose-prom-dead01/owner.pid") << dead << " 12345\n";
  fs::create_directories(temp_root_ + "/diagnose-prom-mine01");
  std::ifstream self_stat("/proc/self/stat");
  std::string content;
  std::getline(self_stat, content);
  std::istringstream fields(content.substr(content.rfind(')') + 2));
  std::string field, start;
  for (int i = 3; i <= 22 && fields >> field; ++i) start = field;
  std::ofstream(temp_root_ + "/diagnose-prom-mine01/owner.pid") << getpid() << " " << start << "\n";
  EXPECT_EQ(RemoveStalePrivateCopies(temp_root_), 1);
  EXPECT_FALSE(fs::exists(temp_root_ + "/diagnose-prom-dead01"));
  EXPECT_TRUE(fs::exists(temp_root_ + "/diagnose-prom-mine01"));
  fs::remove_all(temp_root_ + "/diagnose-prom-mine01");
}

class PrivatePrometheusSignalTest : public PrivatePrometheusTest, public ::testing::WithParamInterface<int> {};

TEST_P(PrivatePrometheusSignalTest, SignalStopsTheServerAndRemovesTheCopy) {
  const int sig = GetParam();
  const std::string ready = temp_root_ + "/ready";
  const std::string spec = SharedJobFixture().tsdb_dir + "|" + temp_root_ + "|" + ready;
  setenv("DIAGNOSE_PRIVATE_PROM_HELPER", spec.c_str(), 1);
  SpawnOptions helper;
  helper.argv = {fs::read_symlink("/proc/self/exe").string()};
  helper.stderr_path = temp_root_ + "/helper.err";
  auto child = ChildProcess::Spawn(helper);
  unsetenv("DIAGNOSE_PRIVATE_PROM_HELPER");
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  for (int i = 0; i < 3000 && !fs::exists(ready) && child->Running(); ++i) usleep(10000);
  ASSERT_TRUE(fs::exists(ready)) << std::ifstream(temp_root_ + "/helper.err").rdbuf();
  int prom_pid = 0;
  std::string copy_dir;
  std::ifstream(ready) >> prom_pid >> copy_dir;
  ASSERT_GT(prom_pid, 0);
  EXPECT_EQ(kill(prom_pid, 0), 0);
  EXPECT_TRUE(fs::exists(copy_dir));
  kill(child->pid(), sig);
  auto code = child->Wait(std::chrono::seconds(30));
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 128 + sig);
  EXPECT_NE(kill(prom_pid, 0), 0) << "prometheus survived its owner's " << strsignal(sig);
  EXPECT_FALSE(fs::exists(copy_dir));
  fs::remove(ready);
  fs::remove(temp_root_ + "/helper.err");
}

INSTANTIATE_TEST_SUITE_P(Signals, PrivatePrometheusSignalTest, ::testing::Values(SIGINT, SIGTERM));

TEST_F(PrivatePrometheusTest, SigkilledOwnerLeavesACopyThatTheNextStartRemoves) {
  const std::string ready = temp_root_ + "/ready";
  setenv("DIAGNOSE_PRIVATE_PROM_HELPER", (SharedJobFixture().tsdb_dir + "|" + temp_root_ + "|" + ready).c_str(), 1);
  SpawnOptions helper;
  helper.argv = {fs::read_symlink("/proc/self/exe").string()};
  auto child = ChildProcess::Spawn(helper);
  unsetenv("DIAGNOSE_PRIVATE_PROM_HELPER");
  ASSERT_TRUE(child.ok());
  for (int i = 0; i < 3000 && !fs::exists(ready) && child->Running(); ++i) usleep(10000);
  int prom_pid = 0;
  std::string copy_dir;
  std::ifstream(ready) >> prom_pid >> copy_dir;
  fs::remove(ready);
  kill(child->pid(), SIGKILL);
  ASSERT_TRUE(child->Wait(std::chrono::seconds(10)).ok());
  for (int i = 0; i < 200 && kill(prom_pid, 0) == 0; ++i) usleep(10000);  // PDEATHSIG
  EXPECT_NE(kill(prom_pid, 0), 0);
  EXPECT_TRUE(fs::exists(copy_dir));  // nobody could clean up after SIGKILL...
  auto next = PrivatePrometheus::Start(SharedJobFixture().tsdb_dir, options_);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_FALSE(fs::exists(copy_dir));  // ...so the next run does
}

}  // namespace
}  // namespace diagnose

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

namespace diagnose {
namespace {

int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

void AgeTree(const std::string& dir, double seconds) {
  const timespec old{time(nullptr) - static_cast<time_t>(seconds), 0};
  const timespec times[2] = {old, old};
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    utimensat(AT_FDCWD, it->path().c_str(), times, AT_SYMLINK_NOFOLLOW);
  }
}

TEST_F(PrivatePrometheusTest, WalOnlySnapshotOfAFinishedJobIsServed) {
  // A real WAL: a Prometheus scrapes itself for a few seconds and is stopped, as a job's would be.
  testing::ScopedTempDir job_scope("private-prom-wal-");
  const std::string& job = job_scope.path;
  const std::string tsdb = job + "/prometheus";
  const int port = FreeLoopbackPort();
  std::ofstream(job + "/scrape.yml") << "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: self\n"
                                        "    static_configs:\n      - targets: ['127.0.0.1:" << port << "']\n";
  SpawnOptions scraper;
  scraper.argv = {"prometheus", "--config.file=" + job + "/scrape.yml", "--storage.tsdb.path=" + tsdb,
                  "--web.listen-address=127.0.0.1:" + std::to_string(port)};
  scraper.stderr_path = job + "/scraper.log";
  const double started = static_cast<double>(time(nullptr));
  {
    auto live = ChildProcess::Spawn(scraper);
    ASSERT_TRUE(live.ok()) << live.status().ToString();
    // The scrape manager applies targets on a 5 s tick: wait until samples exist, then a few more.
    RemoteEndpointOptions endpoint;
    endpoint.url = "http://127.0.0.1:" + std::to_string(port);
    auto probe = HttpQueryClient::Create(endpoint);
    ASSERT_TRUE(probe.ok());
    bool scraped = false;
    for (int i = 0; i < 300 && !scraped; ++i) {
      auto r = (*probe)->Run(Query::Instant("count_over_time(up[1m])", static_cast<double>(time(nullptr))));
      scraped = r.ok() && !r->series.empty() && r->series[0].samples[0].v >= 3;
      if (!scraped) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_TRUE(scraped) << "the scraping Prometheus never stored samples";
    // While it runs, the dir is live.
    auto inv = InspectTsdbDir(tsdb);
    ASSERT_TRUE(inv.ok()) << inv.status().ToString();
    EXPECT_TRUE(inv->has_wal);
    EXPECT_EQ(CheckNotLive(*inv, 120).code(), StatusCode::kFailedPrecondition);
    live->Terminate(std::chrono::seconds(10));
  }
  AgeTree(tsdb, 3600);  // the job ended an hour ago
  const std::string before = testing::DirectoryFingerprint(job);
  {
    auto server = PrivatePrometheus::Start(tsdb, options_);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    EXPECT_TRUE((*server)->inventory().blocks.empty());
    // What the head replayed is the only record of the time a WAL-only TSDB covers.
    const auto& head = (*server)->inventory();
    ASSERT_TRUE(head.head_min_time_ms && head.head_max_time_ms);
    EXPECT_GE(*head.head_min_time_ms / 1000.0, started - 5);
    EXPECT_LE(*head.head_min_time_ms, *head.head_max_time_ms);
    // Against the clock in milliseconds: time() truncates, and the last sample can lie within the
    // current second.
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::system_clock::now().time_since_epoch()).count();
    EXPECT_LE(*head.head_max_time_ms, now_ms);
    auto r = (*server)->client().Run(Query::Range("up", started, started + 30, 1));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->series.size(), 1u);
    EXPECT_GE(r->series[0].samples.size(), 3u);
  }
  EXPECT_EQ(testing::DirectoryFingerprint(job), before);
  fs::remove_all(job);
}

}  // namespace
}  // namespace diagnose

namespace diagnose {
namespace {

// The file server's clock is six hours ahead of this host's: every mtime of a finished job lies in
// the future. That is skew, not a WAL being written, so the TSDB is served and the skew reported.
TEST_F(PrivatePrometheusTest, FutureMtimesAreClockSkewNotALiveTsdb) {
  testing::ScopedTempDir job_scope("private-prom-skew-");
  const std::string tsdb = job_scope.path + "/prometheus";
  fs::copy(SharedJobFixture().tsdb_dir, tsdb, fs::copy_options::recursive);
  fs::create_directories(tsdb + "/wal");
  std::ofstream(tsdb + "/wal/00000003") << std::string(100, '\0');
  AgeTree(tsdb, -6 * 3600.0);
  auto inv = InspectTsdbDir(tsdb);
  ASSERT_TRUE(inv.ok()) << inv.status().ToString();
  ASSERT_TRUE(inv->newest_head_write_age_seconds.has_value());
  EXPECT_LT(*inv->newest_head_write_age_seconds, 0);
  ASSERT_TRUE(inv->clock_skew_seconds.has_value());
  EXPECT_NEAR(*inv->clock_skew_seconds, 6 * 3600.0, 120);
  EXPECT_TRUE(CheckNotLive(*inv, 120).ok());
  EXPECT_TRUE(CheckNotLive(*inv, 120, /*job_finished=*/false).ok());
}

// The log's end state outranks a recent WAL write; a held lock outranks everything.
TEST_F(PrivatePrometheusTest, FinishedJobIsNotLiveUnlessItsLockIsHeld) {
  testing::ScopedTempDir job_scope("private-prom-finished-");
  const std::string tsdb = job_scope.path + "/prometheus";
  fs::copy(SharedJobFixture().tsdb_dir, tsdb, fs::copy_options::recursive);
  fs::create_directories(tsdb + "/wal");
  std::ofstream(tsdb + "/wal/00000003") << std::string(100, '\0');  // written just now
  std::ofstream(tsdb + "/lock") << "";
  auto inv = InspectTsdbDir(tsdb);
  ASSERT_TRUE(inv.ok());
  EXPECT_FALSE(inv->clock_skew_seconds.has_value());
  EXPECT_EQ(CheckNotLive(*inv, 120).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(CheckNotLive(*inv, 120, /*job_finished=*/true).ok());
  int fd = open((tsdb + "/lock").c_str(), O_RDONLY);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  inv = InspectTsdbDir(tsdb);
  ASSERT_TRUE(inv.ok());
  EXPECT_EQ(CheckNotLive(*inv, 120, /*job_finished=*/true).code(), StatusCode::kFailedPrecondition);
  close(fd);
}

}  // namespace
}  // namespace diagnose
