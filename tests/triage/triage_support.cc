#include "tests/triage/triage_support.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace diagnose::testing {

namespace fs = std::filesystem;

TempOutputs::TempOutputs() {
  std::string tmpl = (fs::temp_directory_path() / "diagnose-test-XXXXXX").string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = buf.data();
}

TempOutputs::~TempOutputs() {
  std::error_code ec;
  fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
  for (auto& e : fs::recursive_directory_iterator(path_, fs::directory_options::skip_permission_denied, ec))
    fs::permissions(e.path(), fs::perms::owner_all, fs::perm_options::add | fs::perm_options::nofollow, ec);
  fs::remove_all(path_, ec);
}

std::string TempOutputs::Write(const std::string& rel, const std::string& content) const {
  fs::path p = fs::path(path_) / rel;
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << content;
  return p.string();
}

void TempOutputs::Symlink(const std::string& target, const std::string& rel_link) const {
  fs::path p = fs::path(path_) / rel_link;
  fs::create_directories(p.parent_path());
  fs::create_symlink(target, p);
}

void TempOutputs::Mkdir(const std::string& rel) const { fs::create_directories(fs::path(path_) / rel); }

std::string CompressedNodelist(const std::string& prefix, int first, int n) {
  if (n == 1) return prefix + std::to_string(first);
  return prefix + "[" + std::to_string(first) + "-" + std::to_string(first + n - 1) + "]";
}

LogBuilder::LogBuilder(JobSpec spec) : spec_(std::move(spec)) {}

std::string LogBuilder::Host(int task) const { return spec_.host_prefix + std::to_string(spec_.host_first + task); }

std::string LogBuilder::Label(int task) const {
  int width = static_cast<int>(std::to_string(std::max(0, spec_.ntasks - 1)).size());
  char buf[32];
  std::snprintf(buf, sizeof buf, "%*d: ", width, task);
  return buf;
}

LogBuilder& LogBuilder::Line(int task, const std::string& text) {
  if (task >= 0) {
    out_ += Label(task);
    if (spec_.ray) out_ += "\x1b[36m(MaxTextTrainerActor pid=" + std::to_string(4000 + task) + ")\x1b[0m ";
  }
  out_ += text + "\n";
  return *this;
}

LogBuilder& LogBuilder::Header() {
  Line(-1, "JOB_ID=" + spec_.id);
  Line(-1, "JOB_NAME=" + spec_.name);
  Line(-1, "NNODES=" + std::to_string(spec_.ntasks));
  Line(-1, "JOB_NODELIST=" + CompressedNodelist(spec_.host_prefix, spec_.host_first, spec_.ntasks));
  Line(-1, "JAX_COORDINATOR_PORT=31234");
  if (spec_.ray) Line(-1, "RAY_PORT=6379");
  Line(-1, "PASSTHROUGH_ARGS=\"" + spec_.passthrough + "\"");
  Line(-1, "MODEL_NAME=llama2-70b");
  Line(-1, "[INFO] Running from artifact: /shared/outputs/.artifacts/" + spec_.artifact);
  Line(-1, "=== GIT SUMMARY BEGIN ===");
  Line(-1, "[DIFF]");
  Line(-1, "+  echo \"RESOURCE_EXHAUSTED: Out of memory\"  # a diff line, not job output");
  Line(-1, "=== GIT SUMMARY END ===");
  Line(-1, "==STAGE TIMEOUTS (override: STAGE_TIMEOUTS=\"stage:seconds,...\")==");
  Line(-1, "  preflight    900s");
  Line(-1, "  train        none");
  Line(-1, "=================================================================");
  Line(-1, "== Training BEGIN (no timeout) ==");
  return *this;
}

LogBuilder& LogBuilder::NcclWave() {
  for (int t = 0; t < spec_.ntasks; ++t)
    for (int g = 0; g < 8; ++g) {
      Line(t, "");
      Line(t, Host(t) + ":" + std::to_string(1000 + t) + ":" + std::to_string(2000 + g) + " [" + std::to_string(g) +
                  "] init.cc:2095 NCCL WARN MSCCL++: Feature not enabled. ENABLE_MSCCLPP must be defined at compile-time");
    }
  return *this;
}

LogBuilder& LogBuilder::Setup() {
  for (int t = 0; t < spec_.ntasks; ++t) {
    Line(t, Host(t) + ": COREDUMP_DIR=/coredump");
    Line(t, "PASSTHROUGH_ARGS=\"" + spec_.passthrough + "\"");
    Line(t, "==STARTING DOCKER CONTAINER== (maxtext-slurm-" + spec_.id + "-node" + std::to_string(t) + ")");
    Line(t, "Failed call to cuInit: UNKNOWN ERROR (303)");
    Line(t, "Show all environment variables:");
    Line(t, "HOSTNAME=" + Host(t));
    Line(t, "JOB_ID=" + spec_.id);
    Line(t, "NNODES=" + std::to_string(spec_.ntasks));
    Line(t, "NODE_RANK=" + std::to_string(t));
    if (spec_.ray) Line(t, "RAY=1");
    Line(t, spec_.ray ? "Launching via Ray actor..." : "Launching MaxText.train directly...");
  }
  for (int t = 0; t < spec_.ntasks; ++t) {
    Line(t, "Config param checkpoint_period: 100");
    Line(t, "Config param per_device_batch_size: 2");
    Line(t, "Config param run_name: default_train_test");
  }
  for (int t = 0; t < spec_.ntasks; ++t) Line(t, "No existing checkpoints found, not restoring checkpoint.");
  NcclWave();
  for (int t = 0; t < spec_.ntasks; ++t) Line(t, "====== BARRIER: Synchronizing hosts before training loop ======");
  for (int t = 0; t < spec_.ntasks; ++t) Line(t, "====== BARRIER PASSED: Starting training loop ======");
  return *this;
}

LogBuilder& LogBuilder::Step(int64_t step, double seconds, double tgs, int only_task) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "completed step: %lld, seconds: %.3f, TFLOP/s/device: %.3f, MFU: %.2f%%, Tokens/s/device: %.3f, "
                "total_weights: %d, loss: %.3f",
                static_cast<long long>(step), seconds, tgs * 0.0631, tgs * 0.0631 / 25.0, tgs, 65536,
                9.0 - static_cast<double>(step) * 0.001);
  for (int t = 0; t < spec_.ntasks; ++t)
    if (only_task < 0 || t == only_task) Line(t, buf);
  if (step == 0 && only_task < 0) {
    for (int t = 0; t < spec_.ntasks; ++t) {
      Line(t, "");
      Line(t, "Memstats: After params initialized:");
      Line(t, "\tUsing (GB) 100.21 / 192.0 (52.190476%) on rocm:0");
    }
  }
  return *this;
}

LogBuilder& LogBuilder::Steps(int64_t first, int64_t last, double seconds, double tgs) {
  for (int64_t s = first; s <= last; ++s) Step(s, s == 0 ? 300.0 : seconds, s == 0 ? tgs / 40 : tgs);
  return *this;
}

LogBuilder& LogBuilder::Summary(const std::string& status_line, const std::string& wall) {
  Line(-1, "========================== JOB SUMMARY ==========================");
  Line(-1, "  Job:    " + spec_.id + " (" + spec_.name + ")");
  Line(-1, "  Model:  llama2-70b");
  Line(-1, "  Nodes:  " + std::to_string(spec_.ntasks));
  Line(-1, "  Wall:   " + wall);
  Line(-1, "  Status: " + status_line);
  Line(-1, "=================================================================");
  return *this;
}

std::string JobDirName(const JobSpec& spec) { return spec.id + "-" + spec.name; }

std::string WriteSlurmJob(const TempOutputs& out, const JobSpec& spec, const std::string& log) {
  std::string dir = JobDirName(spec);
  std::string path = out.Write(dir + ".log", log);
  out.Mkdir(dir);
  out.Symlink("../" + dir + ".log", dir + "/log");
  return path;
}

std::string RulesDir() { return std::string(DIAGNOSE_SOURCE_DIR) + "/rules"; }

}  // namespace diagnose::testing
