// Streaming extraction of triage facts from one log file (Slurm primary log, k8s rank log or Ray
// worker .out). Feed() sees each raw line once; memory follows the number of steps, tasks and the
// bounded event lists, never the log size. Results of several files (or of consecutive byte ranges
// of one file) are combined with Merge().
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/log/log_line.h"
#include "engine/report/job_facts.h"
#include "engine/triage/signature_table.h"

namespace diagnose {

struct ScanLimits {
  int max_events_per_kind = 0;
  int nccl_burst_gap_lines = 0;
  int max_memstats_records = 0;
};

// Reads the scan limits from the table's thresholds.
StatusOr<ScanLimits> ScanLimitsFromTable(const SignatureTable& table);

// An absl stamp without a year, kept raw until triage knows the year.
struct AbslStamp {
  int month = 0, day = 0, hour = 0, minute = 0, second = 0;
  std::string text;
  bool valid() const { return month > 0; }
};

struct ClassHit {
  ClassMatch match;
  int64_t ordinal = 0;   // file_index << 40 | line: orders first occurrences across files
};

struct ScanResult {
  // Header (first value wins).
  std::map<std::string, std::string> header_keys;      // JOB_ID, NNODES, JOB_NODELIST, ...
  std::map<std::string, std::string> config;
  int config_task = -2;
  std::map<int64_t, StepRecord> steps;                 // one logical step per number (first seen)
  std::map<int, int64_t> last_step_by_task;
  std::vector<MemstatsRecord> memstats;
  bool barrier_passed = false;
  // Seconds the launcher's stages before training took ("== <Stage> END (<n>s) ==", Training
  // excluded): wall minus this is the time spent in the training stage.
  int64_t pre_training_stage_seconds = 0;
  RestoreFacts restore;
  bool fresh_start_seen = false;
  std::set<int64_t> checkpoint_saves;
  int nccl_bursts = 0;
  JobSummary summary;
  std::vector<NodeExit> node_exits;
  TunnelFacts tunnel;
  // Heartbeat.
  bool heartbeat_present = false;
  std::vector<int> accused_tasks;                      // insertion order, unique
  std::set<int> death_tasks;                           // tasks that logged their own E/F line
  AbslStamp crash_stamp;
  LogRef crash_where;
  std::optional<int64_t> last_step_before_heartbeat;
  std::vector<LogRef> heartbeat_evidence;
  // Classification.
  std::map<std::string, ClassHit> classes;             // by class id
  std::map<std::string, std::vector<LogEvent>> events; // by kind, bounded
  std::string oom_allocation;
  // Task -> host confirmations.
  std::map<int, std::string> env_hostname, env_node_rank;
  std::map<int, std::string> confirmed_hosts;          // rank -> host (env dumps, NODE_EXIT, [Node i @ h])
  // rank -> the node's private address: "[Ray] Starting HEAD|WORKER ... (bind=<ip>)" (srun-labelled),
  // k8s "[<rank>] Starting on <host> (<ip>)".
  std::map<int, std::string> task_addresses;
  std::string nodelist_expanded;
  // Year hints for absl stamps.
  int artifact_year = 0, iso_year = 0;
  int64_t artifact_epoch = 0;   // artifact_YYYYMMDD_HHMMSS (UTC): when the job was submitted
  bool ray = false;
  // The GPU the MFU patch names ("[MFU] MFU tracking enabled (gpu=MI355X, ..."): its Instinct model
  // token (MI355X) when it holds one, else the value as printed; "" when the tasks name more than
  // one model (gpu_devices_differ), whose levels no single model's table gives.
  std::string gpu_device;
  bool gpu_devices_differ = false;
  int64_t lines = 0;
  int64_t labelled_lines = 0;                          // carried an srun task label
  int64_t lines_after_last_step = 0;
  int64_t truncated_lines = 0;
  // Lines holding NUL bytes past a leading pad, or a step line whose field does not parse as a
  // number ("loss: x.568"): skipped, never read as values. NUL padding at a line's start (a node
  // crash leaves the unflushed tail as zeros) is dropped and the text after it read.
  int64_t damaged_lines = 0;
  LogRef first_damaged;

  // Renumbers every line reference by `delta` (a byte range scanned with lines counted from 1).
  void ShiftLines(int64_t delta);
  // Appends `later` (a later file or byte range) into this result.
  void Merge(ScanResult&& later, const ScanLimits& limits);
  // Another task's (or a later part's) GPU model: the first one named is kept until a different
  // one, or a part that already named several, is seen; from then on none is.
  void NoteGpuDevice(const std::string& device, bool devices_differ);
};

class LogScanner {
 public:
  // `display_file` is what evidence quotes; `default_task` labels unlabelled lines (k8s rank-N.log:
  // N; a Ray worker .out: its host's task; else -1). `file_index` orders files for "earliest".
  LogScanner(const SignatureTable& table, const SignatureMatcher& matcher, const ScanLimits& limits,
             std::string display_file, int default_task, int file_index);

  void Feed(std::string_view raw, int64_t line_number);

  // The literals the scanner needs reported by the matcher; build the shared matcher with them
  // (SignatureMatcher(table, LogScanner::Triggers())) so one pass over a line serves everything.
  static const std::vector<std::string>& Triggers();
  ScanResult& result() { return result_; }

 private:
  bool FeedRepeatedStep(std::string_view raw);
  bool HandleStep(const LogLine& line, std::string_view text);
  void NoteDamaged(int64_t line_number);
  void NoteStepSeen(int task, int64_t step);
  int64_t& LastStepOf(int task);
  bool HandleSections(const LogLine& line, std::string_view text);
  bool HandleMessage(const LogLine& line, std::string_view msg);
  bool HandleMemstatsUsage(const LogLine& line, std::string_view trimmed_msg);
  void HandleNodeExit(const LogLine& line, std::string_view msg);
  void HandleBracketedMessage(int task, std::string_view msg);
  void NoteTaskAddress(int task, std::string_view address);
  void HandleSshTunnel(const LogLine& line, std::string_view text);
  void HandleHeader(const LogLine& line, std::string_view text);
  void HandleMfu(std::string_view text);
  void HandleEnvDump(int task, std::string_view text);
  void HandleSummary(const LogLine& line, std::string_view text);
  void HandleHeartbeat(const LogLine& line, std::string_view text);
  void Classify(const LogLine& line, std::string_view text);
  void RecordClasses(const LogLine& line, std::string_view text);
  static uint32_t FindTriggers(std::string_view text);
  LogRef Ref(const LogLine& line, std::string_view text) const;

  const SignatureTable& table_;
  const SignatureMatcher& matcher_;
  ScanLimits limits_;
  std::string file_;
  int default_task_;
  int file_index_;
  ScanResult result_;
  std::string scratch_;
  std::vector<int> class_hits_;
  std::map<int, std::string> pending_memstats_;   // task -> label awaiting its device lines
  bool in_summary_ = false;
  bool in_git_summary_ = false;
  bool in_nccl_burst_ = false;
  int lines_since_nccl_ = 0;
  int heartbeat_tail_ = 0;
  bool fallback_triggers_ = false;   // matcher built without Triggers(): search them one by one
  // result_.last_step_by_task entries by task (std::map nodes are stable): the tasks' step lines
  // interleave, so a map lookup per step line would be the scanner's main cost.
  std::vector<int64_t*> last_step_slots_;
  int64_t last_recorded_step_ = -1;
  std::string last_recorded_step_digits_;   // its text in the line that recorded it
};

}  // namespace diagnose
