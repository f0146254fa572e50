#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <filesystem>
#include <fstream>
#include <random>

#include "engine/log/line_reader.h"
#include "engine/log/log_line.h"

namespace diagnose {
namespace {

class TempFile {
 public:
  explicit TempFile(const std::string& content) {
    char tmpl[] = "/tmp/diagnose-log-XXXXXX";
    int fd = ::mkstemp(tmpl);
    path_ = tmpl;
    ::close(fd);
    std::ofstream(path_, std::ios::binary) << content;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<std::string> ReadAll(const std::string& path, LineReaderOptions o = {}, int64_t begin = 0, int64_t end = -1) {
  LineReader r(o);
  EXPECT_TRUE(r.Open(path, begin, end).ok());
  std::vector<std::string> out;
  std::string_view l;
  while (r.Next(&l)) out.emplace_back(l);
  return out;
}

TEST(LineReaderTest, CrlfTruncatedLastLineAndEmptyLines) {
  TempFile f("a\r\n\nb\nlast-no-newline");
  EXPECT_EQ(ReadAll(f.path()), (std::vector<std::string>{"a", "", "b", "last-no-newline"}));
}

TEST(LineReaderTest, EmptyFile) {
  TempFile f("");
  EXPECT_TRUE(ReadAll(f.path()).empty());
}

TEST(LineReaderTest, OverlongLineIsTruncatedAcrossBlocks) {
  LineReaderOptions o;
  o.block_bytes = 4096;
  o.max_line_bytes = 1000;
  std::string big(1 << 20, 'x');
  TempFile f("head\n" + big + "\ntail\n");
  LineReader r(o);
  ASSERT_TRUE(r.Open(f.path()).ok());
  std::string_view l;
  ASSERT_TRUE(r.Next(&l));
  EXPECT_EQ(l, "head");
  ASSERT_TRUE(r.Next(&l));
  EXPECT_EQ(l.size(), 1000u);
  ASSERT_TRUE(r.Next(&l));
  EXPECT_EQ(l, "tail");
  EXPECT_EQ(r.line_number(), 3);
  EXPECT_EQ(r.truncated_lines(), 1);
  EXPECT_FALSE(r.Next(&l));
}

TEST(LineReaderTest, BinaryGarbageWithNulBytes) {
  std::string g(200 * 1024, '\0');
  std::mt19937 rng(3);
  for (auto& c : g) c = static_cast<char>(rng());
  TempFile f(g);
  LineReaderOptions o;
  o.block_bytes = 8192;
  size_t total = 0, lines = 0;
  LineReader r(o);
  ASSERT_TRUE(r.Open(f.path()).ok());
  std::string_view l;
  while (r.Next(&l)) {
    total += l.size();
    ++lines;
  }
  EXPECT_GT(lines, 100u);
  EXPECT_LE(total, g.size());
}

TEST(LineReaderTest, MissingFileIsNotFound) {
  LineReader r;
  Status s = r.Open("/nonexistent/dir/x.log");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("/nonexistent/dir/x.log"), std::string::npos);
}

// Opening a FIFO for reading blocks until a writer appears: one FIFO named like a job log would
// wedge an epilog. It is refused by its type, without being opened for reading.
TEST(LineReaderTest, AFifoOrDeviceIsRefusedNotOpened) {
  const std::string fifo = "/tmp/diagnose-log-fifo-" + std::to_string(::getpid());
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {fifo, std::string("/dev/zero")}) {
    SCOPED_TRACE(path);
    auto opened = std::async(std::launch::async, [&] {
      LineReader reader;
      return reader.Open(path);
    });
    if (opened.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
      ADD_FAILURE() << "Open blocked on " << path;
      const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);   // lets the blocked open return
      opened.wait();
      if (writer >= 0) ::close(writer);
      continue;
    }
    const Status status = opened.get();
    EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition) << status.ToString();
    EXPECT_NE(status.message().find("not a regular file"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find(path), std::string::npos) << status.message();
  }
  ::unlink(fifo.c_str());
}

TEST(LineReaderTest, RangesSplitAtAnyOffsetCoverEveryLineOnce) {
  std::string content;
  for (int i = 0; i < 500; ++i) content += "line " + std::to_string(i) + std::string(i % 37, '.') + "\n";
  content += "tail";
  TempFile f(content);
  LineReaderOptions o;
  o.block_bytes = 4096;
  auto all = ReadAll(f.path(), o);
  for (int64_t cut : {int64_t{1}, int64_t{7}, static_cast<int64_t>(content.size() / 2),
                      static_cast<int64_t>(content.find("line 100")), static_cast<int64_t>(content.size() - 2)}) {
    auto a = ReadAll(f.path(), o, 0, cut);
    auto b = ReadAll(f.path(), o, cut, -1);
    a.insert(a.end(), b.begin(), b.end());
    EXPECT_EQ(a, all) << "cut at " << cut;
    auto before = CountLinesBefore(f.path(), cut);
    ASSERT_TRUE(before.ok());
  }
}

TEST(LineReaderTest, LastNonEmptyLineSkipsTrailingBlanksAndNumbersFromTheFileStart) {
  std::string content;
  for (int i = 1; i <= 3000; ++i) content += "line " + std::to_string(i) + "\n";
  content += "srun: error: node died\n  \n\n";
  TempFile f(content);
  // A window smaller than the file: the line number still counts from the file's first line.
  auto last = LastNonEmptyLine(f.path(), 100);
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  ASSERT_TRUE(last->has_value());
  EXPECT_EQ((*last)->number, 3001);
  EXPECT_EQ((*last)->text, "srun: error: node died");

  TempFile blank("\n \n\t\n");
  auto none = LastNonEmptyLine(blank.path());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(LastNonEmptyLine("/nonexistent/dir/x.log").status().code(), StatusCode::kNotFound);
}

TEST(LogLineTest, SrunLabelsOfAnyWidth) {
  std::string scratch;
  EXPECT_EQ(ParseLogLine("0: hello", &scratch).task, 0);
  EXPECT_EQ(ParseLogLine(" 8: hello", &scratch).task, 8);
  LogLine l = ParseLogLine("23: completed step: 1", &scratch);
  EXPECT_EQ(l.task, 23);
  EXPECT_EQ(l.text, "completed step: 1");
  EXPECT_EQ(ParseLogLine("  7: x", &scratch).task, 7);
  EXPECT_EQ(ParseLogLine("JOB_ID=8308", &scratch).task, -1);
  EXPECT_EQ(ParseLogLine("12:34:56 not a label", &scratch).task, -1);
  EXPECT_EQ(ParseLogLine("", &scratch).task, -1);
}

TEST(LogLineTest, RayDriverPrefixAndAnsi) {
  std::string scratch;
  LogLine l = ParseLogLine(" 3: \x1b[36m(MaxTextTrainerActor pid=1234)\x1b[0m completed step: 5, seconds: 1.0", &scratch);
  EXPECT_EQ(l.task, 3);
  EXPECT_TRUE(l.ray_driver);
  EXPECT_EQ(l.text, "completed step: 5, seconds: 1.0");
  l = ParseLogLine("0: \x1b[36m(MaxTextTrainerActor pid=99, ip=10.1.2.3)\x1b[0m hello", &scratch);
  EXPECT_TRUE(l.ray_driver);
  EXPECT_EQ(l.text, "hello");
  l = ParseLogLine("  Status: \x1b[31mFAILED (exit 1)\x1b(B\x1b[m", &scratch);
  EXPECT_EQ(l.text, "  Status: FAILED (exit 1)");
}

TEST(LogLineTest, AbslPrefixFullAndAbbreviated) {
  std::string scratch;
  LogLine l = ParseLogLine(" 8: F0224 19:21:00 client.h:77] Terminating process", &scratch);
  EXPECT_EQ(l.absl.level, 'F');
  EXPECT_EQ(l.absl.month, 2);
  EXPECT_EQ(l.absl.day, 24);
  EXPECT_EQ(l.absl.hour, 19);
  EXPECT_EQ(l.absl.minute, 21);
  EXPECT_EQ(l.absl.file_line, "client.h:77");
  EXPECT_EQ(l.absl.message, "Terminating process");
  l = ParseLogLine("E0926 17:26:32.075402  157988 coordination_service_agent.cc:332] Polled an error", &scratch);
  EXPECT_EQ(l.absl.level, 'E');
  EXPECT_EQ(l.absl.stamp, "0926 17:26:32.075402");
  EXPECT_EQ(l.absl.file_line, "coordination_service_agent.cc:332");
  EXPECT_EQ(l.absl.message, "Polled an error");
  l = ParseLogLine("Everything is fine", &scratch);
  EXPECT_EQ(l.absl.level, 0);
  l = ParseLogLine("F1399 19:21:00 a.cc:1] bad month", &scratch);
  EXPECT_EQ(l.absl.level, 0);
}

TEST(LogLineTest, SanitizeForQuote) {
  EXPECT_EQ(SanitizeForQuote("ok \xe2\x80\x94 dash"), "ok \xe2\x80\x94 dash");
  EXPECT_EQ(SanitizeForQuote("bad \xff\xc3"), "bad ??");
  EXPECT_EQ(SanitizeForQuote(std::string("a\0b", 3)), "a?b");
  EXPECT_EQ(SanitizeForQuote(std::string(500, 'x'), 10), std::string(10, 'x') + "...");
}

}  // namespace
}  // namespace diagnose
