#include "engine/profile/trace_reader.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/core/limits.h"
#include "tools/fixturegen/trace_writer.h"

namespace diagnose::profile {
namespace {

std::string ReaderTempDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("diagnose-profile-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string Trace(const std::string& events) {
  return R"j({"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[)j" + events + ",{}]}";
}

constexpr const char* kGpu0 = R"j({"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:GPU:0"}},)j"
                              R"j({"ph":"M","pid":1,"tid":7,"name":"thread_name","args":{"name":"Stream #7(Kernel)"}})j";

TEST(TraceReader, ReadsKernelsStreamsAndHostSteps) {
  auto file = ParseTraceJson(
      Trace(std::string(kGpu0) +
            R"j(,{"ph":"M","pid":701,"name":"process_name","args":{"name":"/host:CPU"}},)j"
            R"j({"ph":"X","pid":1,"tid":7,"ts":10.5,"dur":2.25,"name":"ck::gemm","args":{"correlation_id":"3"}},)j"
            R"j({"ph":"X","pid":701,"tid":1,"ts":0,"dur":100,"name":"train","args":{"step_num":"5"}})j"),
      "/w/2026_01_01_00_00_00/node-1.proc3.trace.json.gz");
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file->host, "node-1");
  EXPECT_EQ(file->window_dir, "2026_01_01_00_00_00");
  ASSERT_EQ(file->gpus.size(), 1u);
  EXPECT_EQ(file->gpus[0].device, 0);
  ASSERT_EQ(file->gpus[0].kernels.size(), 1u);
  EXPECT_DOUBLE_EQ(file->gpus[0].kernels[0].end_us - file->gpus[0].kernels[0].start_us, 2.25);
  EXPECT_EQ(file->names[file->gpus[0].kernels[0].name], "ck::gemm");
  ASSERT_EQ(file->steps.size(), 1u);
  EXPECT_EQ(file->steps[0].step, 5);
  EXPECT_EQ(file->numbering, PidNumbering::kRaw);
  EXPECT_TRUE(file->warnings.empty());
}

TEST(TraceReader, RemappedPidsAreDevicesByTheirProcessName) {
  auto file = ParseTraceJson(
      Trace(R"j({"ph":"M","pid":1003,"name":"process_name","args":{"name":"/device:GPU:2"}},)j"
            R"j({"ph":"M","pid":1003,"tid":7,"name":"thread_name","args":{"name":"Stream #7"}},)j"
            R"j({"ph":"X","pid":1003,"tid":7,"ts":1,"dur":1,"name":"k","args":{}})j"),
      "t.trace.json");
  ASSERT_TRUE(file.ok());
  ASSERT_EQ(file->gpus.size(), 1u);
  EXPECT_EQ(file->gpus[0].device, 2);
  EXPECT_EQ(file->numbering, PidNumbering::kRemapped);
}

TEST(TraceReader, RemappedPidsWithoutProcessNamesAreTakenFromTheirNumbers) {
  auto file = ParseTraceJson(Trace(R"j({"ph":"X","pid":1004,"tid":7,"ts":1,"dur":1,"name":"k","args":{}})j"), "t.json");
  ASSERT_TRUE(file.ok());
  ASSERT_EQ(file->gpus.size(), 1u);
  EXPECT_EQ(file->gpus[0].device, 3);
  ASSERT_FALSE(file->warnings.empty());
  EXPECT_NE(file->warnings[0].find("no process_name metadata"), std::string::npos) << file->warnings[0];
}

TEST(TraceReader, OverlappingSlicesOnOneStreamAreClippedNotSummed) {
  auto file = ParseTraceJson(
      Trace(std::string(kGpu0) +
            R"j(,{"ph":"X","pid":1,"tid":7,"ts":0,"dur":10,"name":"a","args":{}},)j"
            R"j({"ph":"X","pid":1,"tid":7,"ts":4,"dur":2,"name":"b","args":{}})j"),
      "over.json");
  ASSERT_TRUE(file.ok());
  const auto& k = file->gpus[0].kernels;
  ASSERT_EQ(k.size(), 2u);
  EXPECT_DOUBLE_EQ(k[0].end_us, 4);
  EXPECT_EQ(file->clipped_slices, 1);
  EXPECT_DOUBLE_EQ(file->clipped_us, 6);
  ASSERT_EQ(file->warnings.size(), 1u);
  EXPECT_NE(file->warnings[0].find("over.json: 1 slice(s) ran past the next slice"), std::string::npos);
}

TEST(TraceReader, MissingThreadNameIsCountedAndSaid) {
  auto file = ParseTraceJson(
      Trace(R"j({"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:GPU:0"}},)j"
            R"j({"ph":"X","pid":1,"tid":9,"ts":0,"dur":3,"name":"a","args":{}})j"),
      "nothread.json");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->gpus[0].kernels.size(), 1u);
  ASSERT_EQ(file->warnings.size(), 1u);
  EXPECT_EQ(file->warnings[0],
            "nothread.json: 1 device thread(s) without thread_name metadata; their slices are counted as kernels on "
            "a stream named by its tid");
}

TEST(TraceReader, DerivedLinesAreNotKernels) {
  auto file = ParseTraceJson(
      Trace(std::string(kGpu0) +
            R"j(,{"ph":"M","pid":1,"tid":8,"name":"thread_name","args":{"name":"XLA Ops"}},)j"
            R"j({"ph":"X","pid":1,"tid":8,"ts":0,"dur":3,"name":"fusion","args":{}},)j"
            R"j({"ph":"X","pid":1,"tid":7,"ts":0,"dur":3,"name":"fusion.kd","args":{}})j"),
      "lines.json");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->gpus[0].kernels.size(), 1u);
}

TEST(TraceReader, AFileAtTheExportersCapIsTruncated) {
  TraceReadOptions options;
  options.event_cap = 2;
  auto file = ParseTraceJson(
      Trace(std::string(kGpu0) + R"j(,{"ph":"X","pid":1,"tid":7,"ts":0,"dur":1,"name":"a","args":{}},)j"
                                 R"j({"ph":"X","pid":1,"tid":7,"ts":2,"dur":1,"name":"a","args":{}})j"),
      "cap.json", options);
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE(file->truncated);
  ASSERT_FALSE(file->warnings.empty());
  EXPECT_NE(file->warnings[0].find("cap.json: 2 events, the exporter's cap: the window is truncated"),
            std::string::npos);
  EXPECT_EQ(kExporterEventCap, 1'000'000);
}

TEST(TraceReader, BadUtf8IsRefusedWithItsOffset) {
  std::string json = Trace(std::string(kGpu0) + R"j(,{"ph":"X","pid":1,"tid":7,"ts":0,"dur":1,"name":"a)j" + "\xff" +
                           R"j(","args":{}})j");
  const size_t at = json.find('\xff');
  auto file = ParseTraceJson(json, "utf.json");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().message(), "utf.json: invalid UTF-8 at byte " + std::to_string(at) + " of the decompressed JSON");
}

TEST(TraceReader, MalformedJsonNamesTheFile) {
  auto file = ParseTraceJson(R"j({"traceEvents":[{"ph":"X","pid":1,)j", "broken.json");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().message().rfind("broken.json", 0), 0u) << file.status().message();
  // Found by the fuzzer: a malformed args value is an error, not an exception.
  auto args = ParseTraceJson(R"j({"traceEvents":[{"ph":"M","pid":1,"name":"process_name","args":{"name"::"1"}},{}]})j",
                             "args.json");
  ASSERT_FALSE(args.ok());
  EXPECT_EQ(args.status().message().rfind("args.json", 0), 0u) << args.status().message();
  // Found by the fuzzer: a pid beyond int64 is an error naming the file, not undefined behaviour.
  auto huge = ParseTraceJson(Trace(R"j({"ph":"X","pid":1e125,"tid":7,"ts":1,"dur":2,"name":"k"})j"), "huge.json");
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().message().rfind("huge.json", 0), 0u) << huge.status().message();
  auto empty = ParseTraceJson(R"j({"other":1})j", "none.json");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(), "none.json: no traceEvents array: not a Chrome trace-event file");
}

fixturegen::TraceWindowSpec SmallWindow() {
  fixturegen::TraceWindowSpec spec;
  spec.hosts = {"node-1"};
  spec.gpus_per_host = 2;
  spec.steps = 2;
  spec.step_seconds = 1;
  spec.slices = {{"ck::gemm", 0, 0, 0.5, 3}};
  return spec;
}

TEST(TraceReader, ReadsAGzipWindowWrittenLikeTheExporter) {
  const std::string dir = ReaderTempDir("gzip");
  auto written = fixturegen::WriteTraceWindow(SmallWindow(), dir);
  ASSERT_TRUE(written.ok()) << written.status().message();
  auto file = ReadTraceFile(written->files[0]);
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(file->gpus.size(), 2u);
  EXPECT_EQ(file->gpus[0].kernels.size(), 6u);
  EXPECT_EQ(file->steps.size(), 2u);
  std::filesystem::remove_all(dir);
}

TEST(TraceReader, TruncatedGzipNamesTheFileAndTheOffset) {
  const std::string dir = ReaderTempDir("truncated");
  auto written = fixturegen::WriteTraceWindow(SmallWindow(), dir);
  ASSERT_TRUE(written.ok());
  const std::string path = written->files[0];
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size / 2);
  auto file = ReadTraceFile(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(file.status().message().find(path + ": truncated gzip: the compressed stream ends at byte " +
                                         std::to_string(size / 2)),
            std::string::npos)
      << file.status().message();
  std::filesystem::remove_all(dir);
}

TEST(TraceReader, NotGzipIsSaidSo) {
  const std::string dir = ReaderTempDir("notgz");
  const std::string path = dir + "/x.trace.json.gz";
  std::ofstream(path) << "{}";
  auto file = ReadTraceFile(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().message(), path + ": not a gzip file (no gzip magic at byte 0)");
  std::filesystem::remove_all(dir);
}

// A 2 GB member is the same path as this one with the default limit: inflating stops at the limit.
TEST(TraceReader, AnOversizedMemberStopsAtTheLimit) {
  const std::string dir = ReaderTempDir("big");
  auto spec = SmallWindow();
  spec.filler_kernels_per_gpu_step = 20000;   // a few MB of JSON
  auto written = fixturegen::WriteTraceWindow(spec, dir);
  ASSERT_TRUE(written.ok());
  ScopedLimit limit(LimitId::kProfileTraceBytes, 1 << 20);
  auto file = ReadTraceFile(written->files[0]);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(file.status().message().find("exceeds the limit profile.trace_bytes (1 MiB"), std::string::npos)
      << file.status().message();
  EXPECT_NE(file.status().message().find(written->files[0]), std::string::npos);
  std::filesystem::remove_all(dir);
}

// Pieces cut anywhere (inside strings, escapes, keys, numbers) give the same file as one piece.
TEST(TraceReader, PiecesCutAnywhereGiveTheSameTrace) {
  const std::string json =
      R"j({"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[)j" + std::string(kGpu0) +
      R"j(,{"ph":"X","pid":1,"tid":7,"ts":1.5,"dur":2,"name":"a\"b}]{","args":{"x":"]}"}},)j"
      R"j({"ph":"X","pid":1,"tid":7,"ts":9,"dur":1,"name":"c","args":{}},{}],"after":[1,{"a":"b"}]})j";
  auto whole = ParseTraceJson(json, "whole.json");
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  ASSERT_EQ(whole->gpus.size(), 1u);
  ASSERT_EQ(whole->gpus[0].kernels.size(), 2u);
  EXPECT_EQ(whole->names[whole->gpus[0].kernels[0].name], "a\"b}]{");
  for (size_t piece : {1, 2, 3, 7, 13}) {
    TraceReadOptions options;
    options.piece_bytes = piece;
    auto cut = ParseTraceJson(json, "cut.json", options);
    ASSERT_TRUE(cut.ok()) << piece << ": " << cut.status().message();
    ASSERT_EQ(cut->gpus[0].kernels.size(), 2u) << piece;
    EXPECT_EQ(cut->names, whole->names) << piece;
    EXPECT_EQ(cut->uncompressed_bytes, static_cast<int64_t>(json.size()));
  }
}

// The bracket scan reads 64 bytes at a time: runs of backslashes, escaped quotes and brackets inside
// strings must be read the same wherever a block or a piece boundary falls among them. Each kernel
// name is shifted by one more byte, so every run meets every block offset.
TEST(TraceReader, EscapesAndBracketsInStringsAtEveryBlockOffset) {
  std::string events = kGpu0;
  std::vector<std::string> expected;
  for (int shift = 0; shift < 70; ++shift) {
    const std::string pad(static_cast<size_t>(shift), 'p');
    const int slashes = shift % 5;   // an even or odd run before the quote
    std::string raw = pad + "k" + std::string(static_cast<size_t>(2 * slashes), '\\') + "\\\"}]{[" + pad;
    std::string name = pad + "k" + std::string(static_cast<size_t>(slashes), '\\') + "\"}]{[" + pad;
    expected.push_back(name);
    events += R"j(,{"ph":"X","pid":1,"tid":7,"ts":)j" + std::to_string(10 * shift) + R"j(,"dur":1,"name":")j" + raw +
              R"j(","args":{"x":"]}\\"}})j";
  }
  // A key written with an escape is the same key.
  events += R"j(,{"ph":"X","p\u0069d":1,"tid":7,"ts":1000,"dur":1,"n\u0061me":"escaped-key"})j";
  expected.push_back("escaped-key");
  const std::string json = Trace(events);
  for (size_t piece : {size_t{1}, size_t{5}, size_t{63}, size_t{64}, size_t{65}, size_t{8} << 20}) {
    TraceReadOptions options;
    options.piece_bytes = piece;
    auto file = ParseTraceJson(json, "escapes.json", options);
    ASSERT_TRUE(file.ok()) << piece << ": " << file.status().message();
    ASSERT_EQ(file->gpus.size(), 1u);
    ASSERT_EQ(file->gpus[0].kernels.size(), expected.size()) << piece;
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_EQ(file->names[file->gpus[0].kernels[i].name], expected[i]) << piece << " kernel " << i;
  }
}

// A stray bracket after the array, or a document cut inside an escape, is still refused.
TEST(TraceReader, UnbalancedAfterTheArrayAndCutEscapesAreRefused) {
  auto closer = ParseTraceJson(Trace(std::string(kGpu0)) + "]}", "closer.json");
  ASSERT_FALSE(closer.ok());
  EXPECT_NE(closer.status().message().find("closer.json: not a trace-event JSON file: unbalanced brackets at byte"),
            std::string::npos)
      << closer.status().message();
  auto cut = ParseTraceJson(R"j({"traceEvents":[{"ph":"X","name":"a\)j", "cut.json");
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("cut.json: not a trace-event JSON file: the document ends at byte"),
            std::string::npos)
      << cut.status().message();
}

// Arrays where events belong were skipped unread: 200,000 nested ones read as a trace of no events
// (exit 0). They, and nesting past any real trace's, are refused as not a trace.
TEST(TraceReader, ArraysForEventsAndDeepNestingAreRefused) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  auto arrays = ParseTraceJson("{\"traceEvents\":" + deep + "}", "arrays.json");
  ASSERT_FALSE(arrays.ok());
  EXPECT_EQ(arrays.status().message(),
            "arrays.json: not a trace-event JSON file: an array where an event (an object) belongs at byte 16");
  auto elsewhere = ParseTraceJson("{\"x\":" + deep + ",\"traceEvents\":[]}", "elsewhere.json");
  ASSERT_FALSE(elsewhere.ok());
  EXPECT_NE(elsewhere.status().message().find("nesting deeper than 512 levels at byte 516"), std::string::npos)
      << elsewhere.status().message();
  auto in_args = ParseTraceJson("{\"traceEvents\":[{\"ph\":\"X\",\"args\":" + deep + "}]}", "args.json");
  ASSERT_FALSE(in_args.ok());
  EXPECT_NE(in_args.status().message().find("nesting deeper than 512 levels"), std::string::npos);
}

TEST(TraceReader, AGzipWindowReadInSmallPiecesMatchesTheWhole) {
  const std::string dir = ReaderTempDir("pieces");
  auto spec = SmallWindow();
  spec.filler_kernels_per_gpu_step = 500;
  auto written = fixturegen::WriteTraceWindow(spec, dir);
  ASSERT_TRUE(written.ok());
  TraceReadOptions options;
  options.piece_bytes = 4093;
  auto small = ReadTraceFile(written->files[0], options);
  auto big = ReadTraceFile(written->files[0]);
  ASSERT_TRUE(small.ok() && big.ok());
  EXPECT_EQ(small->events, big->events);
  EXPECT_EQ(small->gpus[1].kernels.size(), big->gpus[1].kernels.size());
  std::filesystem::remove_all(dir);
}

TEST(TraceReader, HostOfTraceFile) {
  EXPECT_EQ(HostOfTraceFile("/a/b/node-7.proc12.trace.json.gz"), "node-7");
  EXPECT_EQ(HostOfTraceFile("node-7.trace.json.gz"), "node-7");
  EXPECT_EQ(HostOfTraceFile("node.process.trace.json.gz"), "node.process");
}

}  // namespace
}  // namespace diagnose::profile
