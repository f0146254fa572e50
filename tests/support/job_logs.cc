#include "tests/support/job_logs.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace diagnose {

void OutputsDirTest::SetUp() {
  dir_ = std::filesystem::temp_directory_path() /
         (prefix_ + "-" + std::to_string(::getpid()) + "-" +
          ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir_);
  outputs_ = dir_ / "outputs";
  std::filesystem::create_directories(outputs_);
  history_ = (dir_ / history_name_).string();
}

void OutputsDirTest::TearDown() { std::filesystem::remove_all(dir_); }

JobLog::JobLog(const std::filesystem::path& outputs, std::string id, std::string model, std::vector<std::string> hosts,
               int steps)
    : id_(std::move(id)), model_(std::move(model)), hosts_(std::move(hosts)) {
  path_ = outputs / (id_ + "-JAX-" + model_ + ".log");
  std::string nodelist;
  for (const auto& h : hosts_) nodelist += (nodelist.empty() ? "" : ",") + h;
  Write("JOB_ID=" + id_ + "\nJOB_NAME=JAX-" + model_ + "\nNNODES=" + std::to_string(hosts_.size()) +
        "\nJOB_NODELIST=" + nodelist + "\nJAX_COORDINATOR_PORT=23456\nPASSTHROUGH_ARGS=\"steps=" +
        std::to_string(steps) + "\"\nMODEL_NAME=" + model_ + "\n== Training BEGIN (no timeout) ==\n");
}

void JobLog::Steps(int first, int last, double tgs, double mfu) {
  for (int s = first; s <= last; ++s)
    for (size_t t = 0; t < hosts_.size(); ++t) {
      char line[256];
      std::snprintf(line, sizeof(line),
                    "%zu: completed step: %d, seconds: 30.309, TFLOP/s/device: 207.973, MFU: %.2f%%, "
                    "Tokens/s/device: %.3f, total_weights: 4194304, loss: 7.123\n",
                    t, s, mfu, tgs);
      Write(line);
    }
}

void JobLog::Noise() { Write("0: " + hosts_[0] + ":1:2 [0] NCCL WARN some transport chatter\n"); }

void JobLog::Summary(bool success, int exit_code, const std::string& reason) {
  Write("========================== JOB SUMMARY ==========================\n  Job:    " + id_ + " (JAX-" +
        model_ + ")\n  Model:  " + model_ + "\n  Nodes:  " + std::to_string(hosts_.size()) +
        "\n  Wall:   7m 3s\n  Status: " +
        (success ? std::string("SUCCESS (exit 0)")
                 : "FAILED (exit " + std::to_string(exit_code) + ") \xE2\x80\x94 " + reason) +
        "\n=================================================================\n");
}

void JobLog::Write(const std::string& text) {
  std::ofstream out(path_, std::ios::app | std::ios::binary);
  out << text;
}

}  // namespace diagnose
