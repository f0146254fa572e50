#include "engine/triage/log_scanner.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <ctime>
#include <cstring>

#include "engine/core/scrape_target.h"

namespace diagnose {

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// memcmp, not string_view::compare: with a constant prefix the compiler then inlines it.
bool StartsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && std::memcmp(s.data(), p.data(), p.size()) == 0;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The number at `from` in `s`, after any spaces.
template <typename Number>
bool NumberAt(std::string_view s, size_t from, Number* out) {
  const char* b = s.data() + from;
  const char* e = s.data() + s.size();
  while (b < e && *b == ' ') ++b;
  auto r = std::from_chars(b, e, *out);
  return r.ec == std::errc();
}

// Number right after `key` in `s` ("seconds: 30.309" -> 30.309, "step: 71" -> 71).
template <typename Number>
bool NumberAfter(std::string_view s, std::string_view key, Number* out) {
  size_t p = s.find(key);
  if (p == std::string_view::npos) return false;
  return NumberAt(s, p + key.size(), out);
}

enum class Field { kAbsent, kRead, kDamaged };

// NumberAfter for a field a step line must carry as a number when it carries it at all: a key
// followed by anything but a number is a damaged line, not a zero. The key is looked for once.
template <typename Number>
Field FieldAfter(std::string_view s, std::string_view key, Number* out) {
  const size_t p = s.find(key);
  if (p == std::string_view::npos) return Field::kAbsent;
  Number value{};
  if (!NumberAt(s, p + key.size(), &value)) return Field::kDamaged;
  *out = value;
  return Field::kRead;
}

bool ParseInt(std::string_view s, int64_t* out) {
  s = Trim(s);
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// "1h 2m 3s", "2m 3s", "45s".
int64_t ParseWall(std::string_view s) {
  constexpr int64_t kMaxWallSeconds = int64_t{1} << 40;   // 35,000 years: never a real wall time
  int64_t total = 0, cur = 0;
  bool any = false;
  for (char c : s) {
    if (c >= '0' && c <= '9') {
      if (cur < kMaxWallSeconds) cur = cur * 10 + (c - '0');   // a garbled duration saturates
      any = true;
    } else if (c == 'h' || c == 'm' || c == 's') {
      total = std::min(total + cur * (c == 'h' ? 3600 : c == 'm' ? 60 : 1), kMaxWallSeconds);
      cur = 0;
    }
  }
  return any ? total : 0;
}

// The message of a line whose MaxText text may carry an absl prefix.
std::string_view Message(const LogLine& line) { return line.absl.level ? line.absl.message : line.text; }

int YearAt(std::string_view s, size_t p) {
  if (p + 4 > s.size()) return 0;
  int y = 0;
  for (size_t i = p; i < p + 4; ++i) {
    if (s[i] < '0' || s[i] > '9') return 0;
    y = y * 10 + (s[i] - '0');
  }
  return y >= 1990 && y <= 2200 ? y : 0;
}

// "YYYYMMDD_HHMMSS..." (submit.sh's artifact id, UTC) -> epoch seconds; 0 when malformed.
int64_t ArtifactEpoch(std::string_view s) {
  if (s.size() < 15 || s[8] != '_') return 0;
  auto digits = [&](size_t from, size_t n) {
    int v = 0;
    for (size_t i = from; i < from + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return -1;
      v = v * 10 + (s[i] - '0');
    }
    return v;
  };
  std::tm tm{};
  const int year = YearAt(s, 0), month = digits(4, 2), day = digits(6, 2);
  const int hour = digits(9, 2), minute = digits(11, 2), second = digits(13, 2);
  if (year == 0 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 || minute < 0 ||
      minute > 59 || second < 0 || second > 60)
    return 0;
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return static_cast<int64_t>(timegm(&tm));
}

constexpr std::string_view kStepPrefix = "completed step: ";

// "completed step: N, ...": N and the text after it.
bool ParseStepNumber(std::string_view msg, int64_t* step, std::string_view* rest) {
  if (!StartsWith(msg, kStepPrefix)) return false;
  const char* end = msg.data() + msg.size();
  auto r = std::from_chars(msg.data() + kStepPrefix.size(), end, *step);
  if (r.ec != std::errc()) return false;
  *rest = std::string_view(r.ptr, end - r.ptr);
  return true;
}

// Task numbers below this get a direct slot for their last step; larger ones (never seen in
// practice) fall back to the map, so a garbage label cannot grow the slot table.
constexpr int kTasksWithDirectSlot = 1 << 16;

// Extraction triggers, in bit order (see LogScanner::Triggers()).
constexpr uint32_t kTriggerMsccl = 1u << 0;
constexpr uint32_t kTriggerActor = 1u << 1;
constexpr uint32_t kTriggerSsh = 1u << 2;
constexpr uint32_t kTriggerUnhealthy = 1u << 3;
constexpr uint32_t kTriggerTaskList = 1u << 4;
constexpr uint32_t kTriggerNccl = 1u << 5;

}  // namespace

const std::vector<std::string>& LogScanner::Triggers() {
  static const std::vector<std::string> kTriggers{"MSCCL++: Feature not enabled", "MaxTextTrainerActor", "ssh -J ",
                                                  "stopped sending heartbeats", "/job:jax_worker/replica:", "NCCL"};
  return kTriggers;
}

uint32_t LogScanner::FindTriggers(std::string_view text) {
  uint32_t bits = 0;
  const auto& t = Triggers();
  for (size_t i = 0; i < t.size(); ++i)
    if (text.find(t[i]) != std::string_view::npos) bits |= 1u << i;
  return bits;
}

StatusOr<ScanLimits> ScanLimitsFromTable(const SignatureTable& table) {
  ScanLimits l;
  ASSIGN_OR_RETURN(double a, table.Threshold("max_events_per_kind"));
  ASSIGN_OR_RETURN(double b, table.Threshold("nccl_burst_gap_lines"));
  ASSIGN_OR_RETURN(double c, table.Threshold("max_memstats_records"));
  l.max_events_per_kind = static_cast<int>(a);
  l.nccl_burst_gap_lines = static_cast<int>(b);
  l.max_memstats_records = static_cast<int>(c);
  return l;
}

LogScanner::LogScanner(const SignatureTable& table, const SignatureMatcher& matcher, const ScanLimits& limits,
                       std::string display_file, int default_task, int file_index)
    : table_(table), matcher_(matcher), limits_(limits), file_(std::move(display_file)),
      default_task_(default_task), file_index_(file_index), fallback_triggers_(matcher.triggers() != Triggers()) {}

LogRef LogScanner::Ref(const LogLine& line, std::string_view text) const {
  return LogRef{file_, line.line_number, SanitizeForQuote(text)};
}

void LogScanner::NoteDamaged(int64_t line_number) {
  if (result_.damaged_lines++ == 0) result_.first_damaged = LogRef{file_, line_number, ""};
}

void LogScanner::Feed(std::string_view raw, int64_t line_number) {
  if (std::memchr(raw.data(), '\0', raw.size()) != nullptr) {
    raw.remove_prefix(std::min(raw.size(), raw.find_first_not_of('\0')));
    if (std::memchr(raw.data(), '\0', raw.size()) != nullptr) {
      ++result_.lines;
      NoteDamaged(line_number);
      return;
    }
  }
  if (FeedRepeatedStep(raw)) return;
  LogLine line = ParseLogLine(raw, &scratch_);
  line.line_number = line_number;
  if (line.task >= 0) ++result_.labelled_lines;
  if (line.task < 0) line.task = default_task_;
  ++result_.lines;
  ++result_.lines_after_last_step;
  std::string_view text = line.text;
  if (line.ray_driver) result_.ray = true;
  if (text.empty()) return;

  // Hot path: step lines (the bulk of a training log) are fully recognised and never classified.
  if (HandleStep(line, text)) return;
  if (HandleSections(line, text)) return;
  if (!result_.gpu_devices_differ && text.rfind("[MFU] ", 0) == 0) HandleMfu(text);

  // One automaton pass: failure classes and the extraction triggers below.
  uint32_t triggers = 0;
  matcher_.Match(text, &class_hits_, &triggers);
  if (fallback_triggers_) triggers = FindTriggers(text);
  if (in_nccl_burst_) {
    if (triggers & kTriggerNccl) lines_since_nccl_ = 0;
    else if (++lines_since_nccl_ > limits_.nccl_burst_gap_lines) in_nccl_burst_ = false;
  }

  std::string_view msg = Message(line);
  if (!msg.empty() && HandleMessage(line, msg)) return;

  if (line.task < 0 || (line.task == default_task_ && default_task_ >= 0)) HandleHeader(line, text);
  if (text[0] >= 'A' && text[0] <= 'Z' && text.find('=') != std::string_view::npos) HandleEnvDump(line.task, text);

  if (triggers & kTriggerMsccl) {
    if (!in_nccl_burst_) ++result_.nccl_bursts;
    in_nccl_burst_ = true;
    lines_since_nccl_ = 0;
    return;   // known-harmless for classification
  }
  if (triggers & kTriggerActor) result_.ray = true;
  if (triggers & kTriggerSsh) HandleSshTunnel(line, text);
  if (triggers & (kTriggerUnhealthy | kTriggerTaskList) || line.absl.level == 'E' || line.absl.level == 'F')
    HandleHeartbeat(line, text);
  RecordClasses(line, text);
}

// The launcher's `=`-framed sections: the git summary (arbitrary diff text, not job output), the JOB
// SUMMARY block, the barrier and the pre-training stages' durations. True when the line is consumed.
bool LogScanner::HandleSections(const LogLine& line, std::string_view text) {
  if (text[0] == '=') {
    if (StartsWith(text, "=== GIT SUMMARY BEGIN")) { in_git_summary_ = true; return true; }
    if (StartsWith(text, "=== GIT SUMMARY END")) { in_git_summary_ = false; return true; }
    if (text.find("JOB SUMMARY") != std::string_view::npos) {
      in_summary_ = true;
      JobSummary s;
      s.present = true;
      s.where = Ref(line, text);
      result_.summary = s;   // the last block wins (k8s/local may print it twice)
      return true;
    }
    if (in_summary_ && text.find_first_not_of('=') == std::string_view::npos) { in_summary_ = false; return true; }
    if (StartsWith(text, "====== BARRIER PASSED")) result_.barrier_passed = true;
    if (StartsWith(text, "== ") && !StartsWith(text, "== Training ")) {
      size_t end = text.find(" END (");
      int64_t seconds = 0;
      if (end != std::string_view::npos && ParseInt(text.substr(end + 6, text.find('s', end + 6) - (end + 6)), &seconds) &&
          seconds >= 0)
        result_.pre_training_stage_seconds += seconds;
    }
  }
  if (in_git_summary_) return true;
  if (in_summary_) {
    HandleSummary(line, text);
    return true;
  }
  return false;
}

// The records a message names by its first word (config, Memstats, restore, node exits, checkpoint
// saves, host reports). True when the line is consumed and nothing else may read it.
bool LogScanner::HandleMessage(const LogLine& line, std::string_view msg) {
  switch (msg[0]) {
    case 'C':
      if (StartsWith(msg, "Config param ")) {
        if (result_.config_task == -2) result_.config_task = line.task;
        if (result_.config_task == line.task) {
          std::string_view kv = msg.substr(13);
          size_t colon = kv.find(':');
          if (colon != std::string_view::npos)
            result_.config.emplace(SanitizeForQuote(kv.substr(0, colon), 256), SanitizeForQuote(Trim(kv.substr(colon + 1)), 1024));
        }
        return true;
      }
      return false;
    case 'M':
      if (StartsWith(msg, "Memstats: ")) {
        std::string_view label = Trim(msg.substr(10));
        if (!label.empty() && label.back() == ':') label.remove_suffix(1);
        pending_memstats_[line.task] = SanitizeForQuote(label, 200);
        return true;
      }
      return false;
    case '\t':
    case 'U':
      return HandleMemstatsUsage(line, Trim(msg));
    case 'r':
      if (StartsWith(msg, "restoring from this run's directory step")) {
        int64_t step = 0;
        result_.restore.restored = true;
        if (NumberAfter(msg, "directory step", &step)) result_.restore.restore_step = step;
        result_.restore.where = Ref(line, msg);
        return true;
      }
      return false;
    case 'N':
      if (StartsWith(msg, "No existing checkpoints found")) { result_.fresh_start_seen = true; return true; }
      if (StartsWith(msg, "NODE_EXIT host=")) HandleNodeExit(line, msg);
      return false;
    case 'S':
    case 's':
      if (StartsWith(msg, "Saved a checkpoint at step") || StartsWith(msg, "saved a checkpoint at step") ||
          StartsWith(msg, "Started an asynchronous checkpoint save for step")) {
        int64_t step = 0;
        if (NumberAfter(msg, "step", &step)) result_.checkpoint_saves.insert(step);
        return true;
      }
      return false;
    case '[':
      HandleBracketedMessage(line.task, msg);
      return false;
    default:
      return false;
  }
}

// "Using (GB) <used> / <limit> (<pct>%) on <device>" after a "Memstats: <label>" line of the same task.
bool LogScanner::HandleMemstatsUsage(const LogLine& line, std::string_view t) {
  if (!StartsWith(t, "Using (GB) ")) return false;
  auto it = pending_memstats_.find(line.task);
  if (it != pending_memstats_.end() && static_cast<int>(result_.memstats.size()) < limits_.max_memstats_records) {
    MemstatsRecord m;
    m.label = it->second;
    m.task = line.task;
    NumberAfter(t, "Using (GB) ", &m.used_gb);
    NumberAfter(t, "/ ", &m.limit_gb);
    NumberAfter(t, "(", &m.pct);
    size_t on = t.rfind(" on ");
    if (on != std::string_view::npos) m.device = SanitizeForQuote(t.substr(on + 4), 64);
    m.where = Ref(line, t);
    result_.memstats.push_back(std::move(m));
  }
  return true;
}

// "NODE_EXIT host=<host> ... exit=<code>": the task's exit, and the host it confirms.
void LogScanner::HandleNodeExit(const LogLine& line, std::string_view msg) {
  NodeExit ne;
  ne.task = line.task;
  std::string_view rest = msg.substr(15);
  size_t sp = rest.find(' ');
  ne.host = SanitizeForQuote(rest.substr(0, sp), 256);
  if (size_t dot = ne.host.find('.'); dot != std::string::npos) ne.host.resize(dot);   // FQDN
  int64_t rc = 0;
  if (NumberAfter(msg, "exit=", &rc)) ne.exit_code = static_cast<int>(rc);
  ne.where = Ref(line, msg);
  if (ne.task >= 0 && !ne.host.empty()) result_.confirmed_hosts.emplace(ne.task, ne.host);
  result_.node_exits.push_back(std::move(ne));
}

// An exporter scraped by address is named through this (discovery), so only what reads as an
// address is kept, and a task's first report wins.
void LogScanner::NoteTaskAddress(int task, std::string_view address) {
  const std::string ip = SanitizeForQuote(Trim(address), 64);
  if (task >= 0 && IsAddress(ip)) result_.task_addresses.emplace(task, ip);
}

// "[Node <rank> @ <host>]", k8s "[<rank>] Starting on <host> (<ip>)", the Ray launcher's
// "[Ray] Starting HEAD|WORKER ... (bind=<ip>)" of the labelled task, a watchdog's ISO stamp (the
// year) and "[INFO] Running from artifact:" (the artifact's year and epoch).
void LogScanner::HandleBracketedMessage(int task, std::string_view msg) {
  if (StartsWith(msg, "[Ray] Starting ")) {
    const size_t bind = msg.find("(bind=");
    const size_t close = bind == std::string_view::npos ? bind : msg.find(')', bind);
    if (close != std::string_view::npos) NoteTaskAddress(task, msg.substr(bind + 6, close - bind - 6));
  } else if (StartsWith(msg, "[Node ")) {
    int64_t rank = -1;
    size_t at = msg.find(" @ ");
    size_t close = msg.find(']');
    if (at != std::string_view::npos && close != std::string_view::npos && at < close &&
        ParseInt(msg.substr(6, at - 6), &rank))
      result_.confirmed_hosts.emplace(static_cast<int>(rank), SanitizeForQuote(msg.substr(at + 3, close - at - 3), 256));
  } else if (msg.size() > 5 && msg[1] >= '0' && msg[1] <= '9') {
    size_t close = msg.find("] Starting on ");
    int64_t rank = -1;
    if (close != std::string_view::npos && ParseInt(msg.substr(1, close - 1), &rank)) {
      std::string_view h = msg.substr(close + 14);
      result_.confirmed_hosts.emplace(static_cast<int>(rank), SanitizeForQuote(h.substr(0, h.find(' ')), 256));
      const size_t open = h.find(" ("), end = h.rfind(')');
      if (open != std::string_view::npos && end != std::string_view::npos && end > open)
        NoteTaskAddress(static_cast<int>(rank), h.substr(open + 2, end - open - 2));
    } else if (result_.iso_year == 0) {
      result_.iso_year = YearAt(msg, 1);
    }
  } else if (StartsWith(msg, "[INFO] Running from artifact:")) {
    size_t a = msg.find("artifact_");
    if (a != std::string_view::npos) {
      result_.artifact_year = YearAt(msg, a + 9);
      result_.artifact_epoch = ArtifactEpoch(msg.substr(a + 9));
    }
  }
}

// The Ray head's ssh tunnel: "root@<head> ... -L <a> -L <b> -L <prometheus port>:..." (the first seen).
void LogScanner::HandleSshTunnel(const LogLine& line, std::string_view text) {
  size_t root = text.find("root@");
  if (root == std::string_view::npos || !result_.tunnel.head_host.empty()) return;
  std::string_view h = text.substr(root + 5);
  result_.tunnel.head_host = SanitizeForQuote(Trim(h.substr(0, h.find(' '))), 256);
  size_t pos = 0;
  for (int i = 0; i < 3 && pos != std::string_view::npos; ++i) {
    pos = text.find("-L ", pos);
    if (pos != std::string_view::npos && i < 2) pos += 3;
  }
  int64_t port = 0;
  if (pos != std::string_view::npos && NumberAfter(text.substr(pos), "-L ", &port))
    result_.tunnel.prometheus_port = static_cast<int>(port);
  result_.tunnel.where = Ref(line, text);
}

// Every task prints every step, so most lines of a training log repeat the step just recorded and
// change nothing but their task's last step. Such a line is recognised from its launcher prefixes
// and step number alone, without the ANSI scan over the rest of the line that the full parse does;
// what Feed() would do with it is exactly what this does.
bool LogScanner::FeedRepeatedStep(std::string_view raw) {
  const std::string& digits = last_recorded_step_digits_;
  int task = -1;   // not a whole LogLine: clearing one costs more than this path's work
  bool ray_driver = false;
  std::string_view text = PeelLauncherPrefixes(raw, &task, &ray_driver);
  if (digits.empty() || !StartsWith(text, kStepPrefix)) return false;
  // The very digits of the step just recorded (no number to parse), ended by neither a digit nor an
  // ANSI code: the full parse strips ANSI codes, which could join more digits to the number.
  std::string_view number = text.substr(kStepPrefix.size());
  if (number.size() < digits.size()) return false;
  for (size_t i = 0; i < digits.size(); ++i)   // a few bytes: cheaper than a memcmp call
    if (number[i] != digits[i]) return false;
  if (number.size() > digits.size() && (IsDigit(number[digits.size()]) || number[digits.size()] == '\x1b'))
    return false;
  ++result_.lines;
  if (ray_driver) result_.ray = true;
  NoteStepSeen(task < 0 ? default_task_ : task, last_recorded_step_);
  return true;
}

int64_t& LogScanner::LastStepOf(int task) {
  if (task < 0 || task >= kTasksWithDirectSlot) return result_.last_step_by_task[task];
  if (static_cast<size_t>(task) >= last_step_slots_.size()) last_step_slots_.resize(task + 1, nullptr);
  int64_t*& slot = last_step_slots_[task];
  if (slot == nullptr) slot = &result_.last_step_by_task[task];
  return *slot;
}

void LogScanner::NoteStepSeen(int task, int64_t step) {
  result_.lines_after_last_step = 0;
  in_nccl_burst_ = false;
  int64_t& last = LastStepOf(task);
  last = std::max(last, step);
}

bool LogScanner::HandleStep(const LogLine& line, std::string_view text) {
  std::string_view msg = text;
  if (msg[0] != 'c') {
    if (line.absl.level != 'I' || line.absl.message.empty() || line.absl.message[0] != 'c') return false;
    msg = line.absl.message;
  }
  int64_t step = 0;
  std::string_view rest;
  if (!ParseStepNumber(msg, &step, &rest)) return false;
  NoteStepSeen(line.task, step);
  if (step == last_recorded_step_) return true;
  auto at = result_.steps.lower_bound(step);
  if (at != result_.steps.end() && at->first == step) return true;
  last_recorded_step_ = step;
  last_recorded_step_digits_.assign(msg.data() + kStepPrefix.size(), rest.data());
  StepRecord s;
  s.step = step;
  s.task = line.task;
  double mfu = 0, mtp = 0;
  const Field fields[] = {
      FieldAfter(rest, "seconds:", &s.seconds),
      FieldAfter(rest, "TFLOP/s/device:", &s.tflops_per_device),
      FieldAfter(rest, "MFU:", &mfu),
      FieldAfter(rest, "Tokens/s/device:", &s.tokens_per_sec_per_device),
      FieldAfter(rest, "total_weights:", &s.total_weights),
      FieldAfter(rest, " loss:", &s.loss),
      FieldAfter(rest, "mtp_loss:", &mtp),
  };
  if (std::find(std::begin(fields), std::end(fields), Field::kDamaged) != std::end(fields)) {
    // Its step was seen (the number parsed), but none of its values is trusted.
    last_recorded_step_ = -1;
    last_recorded_step_digits_.clear();
    NoteDamaged(line.line_number);
    return true;
  }
  if (fields[2] == Field::kRead) s.mfu_pct = mfu;
  if (fields[6] == Field::kRead) s.mtp_loss = mtp;
  // No quoted text: every step is kept, and its fields already say what the line said.
  s.where = LogRef{file_, line.line_number, ""};
  result_.steps.emplace_hint(at, step, std::move(s));
  return true;
}

void LogScanner::HandleHeader(const LogLine& line, std::string_view text) {
  static constexpr std::string_view kKeys[] = {
      "JOB_ID", "JOB_NAME", "NNODES", "JOB_NODELIST", "JAX_COORDINATOR_PORT", "RAY_PORT",
      "PASSTHROUGH_ARGS", "MODEL_NAME", "MODEL_NAME_ALIAS", "EXP_TAG", "SLURM_JOB_ID",
      "SLURM_JOB_NAME", "SLURM_JOB_NUM_NODES", "SLURM_JOB_NODELIST"};
  size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq > 24) return;
  std::string_view key = Trim(text.substr(0, eq));
  for (std::string_view k : kKeys) {
    if (key != k) continue;
    std::string_view v = Trim(text.substr(eq + 1));
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    result_.header_keys.emplace(std::string(k), SanitizeForQuote(v, 4096));
    if (k == "RAY_PORT") result_.ray = true;
    return;
  }
}

// "[MFU] MFU tracking enabled (gpu=<GPU>, dtype=..." or "... disabled (gpu=<g> not in lookup
// table; ...": the GPU model the job ran on, for the rules' model levels when no Ray series names it.
void LogScanner::HandleMfu(std::string_view text) {
  const size_t at = text.find("(gpu=");
  if (at == std::string_view::npos) return;
  std::string_view value = text.substr(at + 5);
  value = value.substr(0, std::min(value.find_first_of(",;)"), value.size()));
  value = Trim(value.substr(0, std::min(value.find(" not in "), value.size())));
  // The Instinct model token (MI<digits><letters>) when the value holds one: "AMD Instinct MI300X" -> MI300X.
  for (size_t i = 0; i + 2 < value.size(); ++i) {
    if (value[i] != 'M' || value[i + 1] != 'I' || !std::isdigit(static_cast<unsigned char>(value[i + 2]))) continue;
    size_t end = i + 2;
    while (end < value.size() && std::isalnum(static_cast<unsigned char>(value[end]))) ++end;
    value = value.substr(i, end - i);
    break;
  }
  result_.NoteGpuDevice(SanitizeForQuote(value, 64), false);
}

void LogScanner::HandleEnvDump(int task, std::string_view text) {
  if (StartsWith(text, "HOSTNAME=")) {
    std::string h = SanitizeForQuote(Trim(text.substr(9)), 256);
    if (size_t dot = h.find('.'); dot != std::string::npos) h.resize(dot);
    result_.env_hostname.emplace(task, h);
  } else if (StartsWith(text, "NODE_RANK=")) {
    result_.env_node_rank.emplace(task, SanitizeForQuote(Trim(text.substr(10)), 32));
  } else if (StartsWith(text, "NODELIST_EXPANDED=")) {
    if (result_.nodelist_expanded.empty()) result_.nodelist_expanded = SanitizeForQuote(Trim(text.substr(18)), 65536);
  } else if (StartsWith(text, "RAY=1")) {
    result_.ray = true;
  }
}

void LogScanner::HandleSummary(const LogLine& line, std::string_view text) {
  std::string_view t = Trim(text);
  if (StartsWith(t, "Wall:")) {
    result_.summary.wall_seconds = ParseWall(t.substr(5));
  } else if (StartsWith(t, "Status:")) {
    std::string_view s = Trim(t.substr(7));
    if (StartsWith(s, "SUCCESS")) result_.summary.status = "SUCCESS";
    else if (StartsWith(s, "FAILED")) result_.summary.status = "FAILED";
    int64_t rc = 0;
    if (NumberAfter(s, "(exit", &rc)) result_.summary.exit_code = static_cast<int>(rc);
    size_t dash = s.find("\xe2\x80\x94");   // em dash
    const size_t skip = 3;   // the em dash and " - " are both 3 bytes
    if (dash == std::string_view::npos) dash = s.find(" - ");
    if (dash != std::string_view::npos) result_.summary.reason = SanitizeForQuote(Trim(s.substr(dash + skip)), 300);
    result_.summary.where = Ref(line, t);
    // A cancelled summary is also a classified line.
    Classify(line, text);
  }
}

void LogScanner::HandleHeartbeat(const LogLine& line, std::string_view text) {
  // Newer coordinators: "stopped sending heartbeats"; older TF/TSL ones: "Task /job:...:N heartbeat timeout".
  bool unhealthy = text.find("stopped sending heartbeats") != std::string_view::npos ||
                   text.find("heartbeat timeout") != std::string_view::npos;
  if (unhealthy) {
    if (!result_.heartbeat_present) {
      result_.heartbeat_present = true;
      if (!result_.steps.empty()) result_.last_step_before_heartbeat = result_.steps.rbegin()->first;
    }
    if (result_.heartbeat_evidence.size() < 8) result_.heartbeat_evidence.push_back(Ref(line, text));
  }
  // Task lists follow the "unhealthy" line; collected wherever they appear (a byte-range split may
  // separate them from it) and used only when a heartbeat block exists.
  {
    size_t p = text.find("/job:jax_worker/replica:");
    if (p != std::string_view::npos) {
      int64_t task = -1;
      if (NumberAfter(text.substr(p), "/task:", &task) && task >= 0) {
        if (std::find(result_.accused_tasks.begin(), result_.accused_tasks.end(), task) ==
            result_.accused_tasks.end())
          result_.accused_tasks.push_back(static_cast<int>(task));
      }
    }
  }
  // A task that reports the coordination error itself was alive to do so.
  if (line.absl.level == 'E' || line.absl.level == 'F') {
    std::string_view m = line.absl.message;
    if (m.find("coordination service") != std::string_view::npos ||
        m.find("Terminating process because the JAX distributed") != std::string_view::npos ||
        m.find("Use error polling to propagate") != std::string_view::npos) {
      if (line.task >= 0) result_.death_tasks.insert(line.task);
      AbslStamp st{line.absl.month, line.absl.day, line.absl.hour, line.absl.minute, line.absl.second,
                   std::string(line.absl.stamp)};
      auto key = [](const AbslStamp& a) { return (((a.month * 32 + a.day) * 24 + a.hour) * 60 + a.minute) * 60 + a.second; };
      if (!result_.crash_stamp.valid() || key(st) < key(result_.crash_stamp)) {
        result_.crash_stamp = st;
        result_.crash_where = Ref(line, text);
      }
      if (result_.heartbeat_evidence.size() < 8) result_.heartbeat_evidence.push_back(Ref(line, text));
    }
  }
}

void LogScanner::Classify(const LogLine& line, std::string_view text) {
  matcher_.Match(text, &class_hits_);
  RecordClasses(line, text);
}

void LogScanner::RecordClasses(const LogLine& line, std::string_view text) {
  if (class_hits_.empty()) return;
  if (result_.iso_year == 0) {
    size_t at = text.find("CANCELLED AT ");
    if (at != std::string_view::npos) result_.iso_year = YearAt(text, at + 13);
  }
  int64_t ordinal = (static_cast<int64_t>(file_index_) << 40) | line.line_number;
  for (int ci : class_hits_) {
    const FailureSignature& sig = table_.classes[ci];
    auto it = result_.classes.find(sig.id);
    if (it == result_.classes.end()) {
      ClassHit hit;
      hit.match.failure_class = sig.id;
      hit.match.priority = sig.priority;
      hit.match.stage = sig.stage;
      hit.match.task = line.task;
      hit.match.where = Ref(line, text);
      hit.match.count = 1;
      hit.ordinal = ordinal;
      result_.classes.emplace(sig.id, std::move(hit));
    } else {
      ++it->second.match.count;
    }
    auto& ev = result_.events[sig.id];
    if (static_cast<int>(ev.size()) < limits_.max_events_per_kind) {
      LogEvent e;
      e.kind = sig.id;
      e.task = line.task;
      e.where = Ref(line, text);
      // The year is filled in by triage once it knows where to take it from.
      if (line.absl.level) e.time = LogTime{0, std::string(line.absl.stamp), ""};
      ev.push_back(std::move(e));
    }
    if (sig.id == "oom-gpu" && result_.oom_allocation.empty()) {
      size_t p = text.find("allocate ");
      if (p != std::string_view::npos) {
        std::string_view v = text.substr(p + 9);
        size_t end = v.find_first_of(" .:", v.find_first_not_of("0123456789."));
        std::string_view size = v.substr(0, end);
        if (!size.empty() && size.back() == 'B') result_.oom_allocation = std::string(size);
      }
    }
  }
}

void ScanResult::ShiftLines(int64_t delta) {
  auto shift = [delta](LogRef& r) {
    if (r.line > 0) r.line += delta;
  };
  for (auto& kv : steps) shift(kv.second.where);
  for (auto& m : memstats) shift(m.where);
  shift(restore.where);
  shift(summary.where);
  for (auto& n : node_exits) shift(n.where);
  shift(tunnel.where);
  shift(crash_where);
  for (auto& e : heartbeat_evidence) shift(e);
  for (auto& kv : classes) {
    shift(kv.second.match.where);
    kv.second.ordinal += delta;
  }
  for (auto& kv : events)
    for (auto& e : kv.second) shift(e.where);
  shift(first_damaged);
}

void ScanResult::NoteGpuDevice(const std::string& device, bool devices_differ) {
  if (gpu_devices_differ) return;
  if (devices_differ || (!gpu_device.empty() && !device.empty() && device != gpu_device)) {
    gpu_devices_differ = true;
    gpu_device.clear();
  } else if (gpu_device.empty()) {
    gpu_device = device;
  }
}

void ScanResult::Merge(ScanResult&& later, const ScanLimits& limits) {
  for (auto& kv : later.header_keys) header_keys.emplace(kv.first, std::move(kv.second));
  if (config.empty()) {
    config = std::move(later.config);
    config_task = later.config_task;
  }
  for (auto& kv : later.last_step_by_task) {
    auto& v = last_step_by_task[kv.first];
    v = std::max(v, kv.second);
  }
  for (auto& m : later.memstats)
    if (static_cast<int>(memstats.size()) < limits.max_memstats_records) memstats.push_back(std::move(m));
  barrier_passed = barrier_passed || later.barrier_passed;
  pre_training_stage_seconds += later.pre_training_stage_seconds;
  if (!restore.restored && later.restore.restored) restore = later.restore;
  fresh_start_seen = fresh_start_seen || later.fresh_start_seen;
  checkpoint_saves.insert(later.checkpoint_saves.begin(), later.checkpoint_saves.end());
  nccl_bursts += later.nccl_bursts;
  if (later.summary.present) summary = later.summary;
  for (auto& n : later.node_exits) node_exits.push_back(std::move(n));
  if (tunnel.head_host.empty()) tunnel = later.tunnel;
  if (!heartbeat_present && later.heartbeat_present) {
    last_step_before_heartbeat = later.last_step_before_heartbeat;
    if (!last_step_before_heartbeat && !steps.empty()) last_step_before_heartbeat = steps.rbegin()->first;
  }
  heartbeat_present = heartbeat_present || later.heartbeat_present;
  for (int t : later.accused_tasks)
    if (std::find(accused_tasks.begin(), accused_tasks.end(), t) == accused_tasks.end()) accused_tasks.push_back(t);
  death_tasks.insert(later.death_tasks.begin(), later.death_tasks.end());
  auto key = [](const AbslStamp& a) { return (((a.month * 32 + a.day) * 24 + a.hour) * 60 + a.minute) * 60 + a.second; };
  if (later.crash_stamp.valid() && (!crash_stamp.valid() || key(later.crash_stamp) < key(crash_stamp))) {
    crash_stamp = later.crash_stamp;
    crash_where = later.crash_where;
  }
  // Decided before the merge below empties `later.steps`.
  const bool later_has_steps = !later.steps.empty();
  // Node by node at the end hint: a later range's steps follow ours, so each splice is constant
  // time (std::map::merge searches for every key). Keys already present keep the earlier record.
  while (!later.steps.empty()) steps.insert(steps.end(), later.steps.extract(later.steps.begin()));
  for (auto& e : later.heartbeat_evidence)
    if (heartbeat_evidence.size() < 8) heartbeat_evidence.push_back(std::move(e));
  for (auto& kv : later.classes) {
    auto it = classes.find(kv.first);
    if (it == classes.end()) classes.emplace(kv.first, std::move(kv.second));
    else it->second.match.count += kv.second.match.count;
  }
  for (auto& kv : later.events) {
    auto& ev = events[kv.first];
    for (auto& e : kv.second)
      if (static_cast<int>(ev.size()) < limits.max_events_per_kind) ev.push_back(std::move(e));
  }
  if (oom_allocation.empty()) oom_allocation = later.oom_allocation;
  for (auto& kv : later.env_hostname) env_hostname.emplace(kv.first, kv.second);
  for (auto& kv : later.env_node_rank) env_node_rank.emplace(kv.first, kv.second);
  for (auto& kv : later.confirmed_hosts) confirmed_hosts.emplace(kv.first, kv.second);
  for (auto& kv : later.task_addresses) task_addresses.emplace(kv.first, kv.second);
  if (nodelist_expanded.empty()) nodelist_expanded = later.nodelist_expanded;
  if (!artifact_year) artifact_year = later.artifact_year;
  if (!artifact_epoch) artifact_epoch = later.artifact_epoch;
  if (!iso_year) iso_year = later.iso_year;
  ray = ray || later.ray;
  NoteGpuDevice(later.gpu_device, later.gpu_devices_differ);
  lines += later.lines;
  labelled_lines += later.labelled_lines;
  lines_after_last_step = later_has_steps ? later.lines_after_last_step : lines_after_last_step + later.lines;
  truncated_lines += later.truncated_lines;
  if (damaged_lines == 0) first_damaged = later.first_damaged;
  damaged_lines += later.damaged_lines;
}

}  // namespace diagnose
