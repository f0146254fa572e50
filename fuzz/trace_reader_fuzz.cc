// The profile trace reader (engine/profile/trace_reader.h) on bytes from anywhere.
// Mode 0: the bytes as decompressed trace JSON, in one piece. Other even modes: the same JSON fed in
// pieces of mode/2 bytes, so events, strings and escapes cut at every place meet the reader's
// carry from one piece to the next. Odd modes: the bytes as a .trace.json.gz file, so the inflate
// path (truncated members, bad blocks, trailing garbage) is fuzzed too.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/core/limits.h"
#include "engine/profile/trace_reader.h"
#include "fuzz/fuzz_input.h"

namespace {

const std::string& GzipPath() {
  static const std::string path = [] {
    const std::filesystem::path base =
        std::filesystem::exists("/dev/shm") ? std::filesystem::path("/dev/shm") : std::filesystem::temp_directory_path();
    return (base / ("diagnose-fuzz-trace-" + std::to_string(::getpid()) + ".trace.json.gz")).string();
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A small bound keeps a decompression bomb from being the fuzzer's whole time budget.
  static diagnose::ScopedLimit limit(diagnose::LimitId::kProfileTraceBytes, 64 << 20);
  std::string_view text = diagnose::fuzz::AsText(data, size);
  const uint8_t mode = diagnose::fuzz::TakeMode(&text);
  diagnose::profile::TraceReadOptions options;
  options.event_cap = 1000;
  if (mode % 2 == 0) {
    if (mode > 0) options.piece_bytes = mode / 2;
    (void)diagnose::profile::ParseTraceJson(std::string(text), "fuzz.trace.json", options);
    return 0;
  }
  {
    std::ofstream out(GzipPath(), std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  (void)diagnose::profile::ReadTraceFile(GzipPath(), options);
  return 0;
}
