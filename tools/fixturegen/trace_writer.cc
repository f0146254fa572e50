#include "tools/fixturegen/trace_writer.h"

#include <zlib.h>

#include <cstdio>
#include <filesystem>

namespace diagnose::fixturegen {

namespace {

// The host plane's pid in current TSL; devices are 1 + plane id (or 1001 + once remapped).
constexpr int64_t kHostPid = 701;
constexpr int64_t kFirstStreamTid = 10;
constexpr size_t kFlushBytes = 1 << 20;
constexpr double kMicros = 1e6;

class GzipOut {
 public:
  GzipOut(const std::string& path, int level) : path_(path) {
    file_ = gzopen(path.c_str(), ("wb" + std::to_string(level)).c_str());
  }
  ~GzipOut() {
    if (file_ != nullptr) gzclose(file_);
  }
  bool ok() const { return file_ != nullptr && ok_; }
  void Append(const char* text, size_t n) {
    buffer_.append(text, n);
    bytes_ += static_cast<int64_t>(n);
    if (buffer_.size() >= kFlushBytes) Flush();
  }
  void Append(const std::string& text) { Append(text.data(), text.size()); }
  Status Close() {
    Flush();
    const int rc = gzclose(file_);
    file_ = nullptr;
    if (!ok_ || rc != Z_OK) return InternalError(path_ + ": writing the gzip trace failed");
    return Status::Ok();
  }
  int64_t bytes() const { return bytes_; }

 private:
  void Flush() {
    if (file_ == nullptr || buffer_.empty()) return;
    if (gzwrite(file_, buffer_.data(), static_cast<unsigned>(buffer_.size())) != static_cast<int>(buffer_.size()))
      ok_ = false;
    buffer_.clear();
  }
  std::string path_;
  gzFile file_ = nullptr;
  std::string buffer_;
  bool ok_ = true;
  int64_t bytes_ = 0;
};

void Event(GzipOut& out, int64_t pid, int64_t tid, double ts_us, double dur_us, const std::string& name,
           const std::string& args, bool* first) {
  char head[160];
  const int n = std::snprintf(head, sizeof head, "%s{\"ph\":\"X\",\"pid\":%lld,\"tid\":%lld,\"ts\":%.6f,\"dur\":%.6f,\"name\":\"",
                              *first ? "" : ",", static_cast<long long>(pid), static_cast<long long>(tid), ts_us, dur_us);
  *first = false;
  out.Append(head, static_cast<size_t>(n));
  out.Append(name);
  out.Append("\",\"args\":{" + args + "}}");
}

void Metadata(GzipOut& out, const char* what, int64_t pid, int64_t tid, const std::string& value, bool* first) {
  char text[256];
  const int n = tid < 0 ? std::snprintf(text, sizeof text, "%s{\"ph\":\"M\",\"pid\":%lld,\"name\":\"%s\",\"args\":{\"name\":\"%s\"}}",
                                        *first ? "" : ",", static_cast<long long>(pid), what, value.c_str())
                        : std::snprintf(text, sizeof text,
                                        "%s{\"ph\":\"M\",\"pid\":%lld,\"tid\":%lld,\"name\":\"%s\",\"args\":{\"name\":\"%s\"}}",
                                        *first ? "" : ",", static_cast<long long>(pid), static_cast<long long>(tid), what,
                                        value.c_str());
  *first = false;
  out.Append(text, static_cast<size_t>(n));
}

int StreamCount(const TraceWindowSpec& spec) {
  int streams = spec.filler_kernels_per_gpu_step > 0 ? 3 : 1;
  for (const auto& s : spec.slices) streams = std::max(streams, s.stream + 1);
  return streams;
}

// One file: the devices it holds, then the host's step annotations.
Status WriteFile(const TraceWindowSpec& spec, const std::string& path, const std::string& host,
                 const std::vector<int>& devices, TraceWindowReport* report) {
  GzipOut out(path, spec.compression_level);
  if (!out.ok()) return InternalError(path + ": cannot create");
  out.Append("{\"displayTimeUnit\":\"ns\",\"metadata\":{\"highres-ticks\":true},\"traceEvents\":[");
  bool first = true;
  const int streams = StreamCount(spec);
  // In 1-GPU/proc each process sees its one GPU as plane 0.
  const auto pid_of = [&](size_t i) { return spec.device_pid_base + static_cast<int64_t>(i); };
  for (size_t i = 0; i < devices.size(); ++i) {
    Metadata(out, "process_name", pid_of(i), -1, "/device:GPU:" + std::to_string(spec.one_file_per_gpu ? 0 : devices[i]),
             &first);
    if (spec.thread_names)
      for (int s = 0; s < streams; ++s)
        Metadata(out, "thread_name", pid_of(i), kFirstStreamTid + s,
                 "Stream #" + std::to_string(kFirstStreamTid + s) + "(Kernel)", &first);
  }
  if (spec.host_steps) Metadata(out, "process_name", kHostPid, -1, "/host:CPU", &first);
  int64_t events = 0;
  int64_t correlation = 0;
  for (size_t i = 0; i < devices.size(); ++i) {
    const bool slow = host == spec.slow_host && devices[i] == spec.slow_device;
    for (int step = 0; step < spec.steps; ++step) {
      const double step_start = step * spec.step_seconds * kMicros;
      for (const auto& slice : spec.slices) {
        // The slow GPU's main stream runs stretched in time, so its kernels stay in order.
        const double factor = slow && slice.stream == 0 ? spec.slow_factor : 1;
        const double piece = slice.dur_s * factor * kMicros / slice.launches;
        for (int l = 0; l < slice.launches; ++l) {
          Event(out, pid_of(i), kFirstStreamTid + slice.stream,
                step_start + slice.start_s * factor * kMicros + l * piece, piece,
                slice.name, "\"correlation_id\":\"" + std::to_string(++correlation) + "\"", &first);
          ++events;
        }
      }
      // Filler: a stream of short copies spread over the step, each 1 µs.
      const double spacing = spec.step_seconds * kMicros / static_cast<double>(spec.filler_kernels_per_gpu_step + 1);
      for (int64_t f = 0; f < spec.filler_kernels_per_gpu_step; ++f) {
        Event(out, pid_of(i), kFirstStreamTid + 2, step_start + static_cast<double>(f) * spacing, 1.0,
              "hipMemcpyDtoDAsync_filler", "\"correlation_id\":\"" + std::to_string(++correlation) + "\"", &first);
        ++events;
      }
    }
  }
  if (spec.host_steps)
    for (int step = 0; step < spec.steps; ++step) {
      Event(out, kHostPid, 1, step * spec.step_seconds * kMicros, spec.step_seconds * kMicros, "train",
            "\"step_num\":\"" + std::to_string(spec.first_step + step) + "\"", &first);
      ++events;
    }
  out.Append(first ? "{}]}" : ",{}]}");
  report->files.push_back(path);
  report->events += events;
  report->json_bytes = std::max(report->json_bytes, out.bytes());
  return out.Close();
}

}  // namespace

StatusOr<TraceWindowReport> WriteTraceWindow(const TraceWindowSpec& spec, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InternalError(dir + ": " + ec.message());
  TraceWindowReport report;
  for (const auto& host : spec.hosts) {
    if (spec.one_file_per_gpu) {
      for (int g = 0; g < spec.gpus_per_host; ++g)
        RETURN_IF_ERROR(WriteFile(spec, dir + "/" + host + ".proc" + std::to_string(g) + ".trace.json.gz", host, {g},
                                  &report));
    } else {
      std::vector<int> devices;
      for (int g = 0; g < spec.gpus_per_host; ++g) devices.push_back(g);
      RETURN_IF_ERROR(WriteFile(spec, dir + "/" + host + ".trace.json.gz", host, devices, &report));
    }
  }
  return report;
}

}  // namespace diagnose::fixturegen
