// Strings from outside reach the report only as valid UTF-8: nlohmann::json aborts the report on
// anything else (type_error.316), so the checks are exactly the ones its serialiser makes.
#include "engine/core/utf8.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace diagnose {
namespace {

TEST(Utf8, WellFormedTextIsKept) {
  const std::string text = "GPU 3 \xc2\xb0" "C \xe2\x80\x94 caf\xc3\xa9 \xf0\x9f\x94\xa5";
  EXPECT_EQ(ValidUtf8(text), text);
}

TEST(Utf8, EveryIllFormedSequenceIsReplacedAndSerialises) {
  const std::vector<std::string> bad = {
      std::string(100, '\xff'),   // never valid
      "\xc0\x80",                 // overlong NUL
      "\xe0\x80\xaf",             // overlong '/'
      "\xed\xa0\x80",             // UTF-16 surrogate
      "\xf4\x90\x80\x80",         // above U+10FFFF
      "\xe2\x80",                 // truncated
      "ok \xc3",                  // truncated at the end
      "\x80 lone continuation",
  };
  for (const auto& b : bad) {
    const std::string fixed = ValidUtf8(b);
    EXPECT_THROW(nlohmann::json(b).dump(), nlohmann::json::type_error) << "input was valid after all";
    EXPECT_NO_THROW(nlohmann::json(fixed).dump()) << fixed;
    EXPECT_NE(fixed.find('?'), std::string::npos);
  }
}

TEST(Utf8, BoundAndControls) {
  EXPECT_EQ(ValidUtf8("abcdef", 3), "abc...");
  EXPECT_EQ(ValidUtf8("a\nb\tc", std::string::npos, /*strip_controls=*/true), "a?b\tc");
  EXPECT_EQ(ValidUtf8("a\nb"), "a\nb");
}

TEST(Utf8, OneLineEscapesWhatWouldForgeALine) {
  EXPECT_EQ(OneLine("job 88\nfake: line"), "job 88\\nfake: line");
  EXPECT_EQ(OneLine("a\tb\r\x1b[31m"), "a\\tb\\r\\x1b[31m");
  EXPECT_EQ(OneLine("\xff"), "?");
}

// The text and Markdown reports' sanitiser (adversarial test 17, defects 02 and 10): every C0
// control but tab, DEL and every C1 control written visibly; tab kept for a quoted log's columns.
TEST(Utf8, PrintableLineWritesEveryControlVisibly) {
  EXPECT_EQ(PrintableLine("h\x1b]0;t\x07\nexclude x\r\x7f\xc2\x9b" "1m\xc2\x85\tcol \xc3\xa9\xc2\xa0"),
            "h\\x1b]0;t\\x07\\nexclude x\\r\\x7f\\u009b1m\\u0085\tcol \xc3\xa9\xc2\xa0");
  EXPECT_EQ(PrintableLine("abcdef", 3), "abc...");
  EXPECT_EQ(PrintableLine("\xff\xc2"), "??");
  EXPECT_EQ(OneLine("\xc2\x9b\t"), "\\u009b\\t");
}

TEST(Utf8, WithoutControlsKeepsLinesButNoTerminalEscape) {
  EXPECT_EQ(WithoutControls("a\tb\nc\r\x1b[31m\x07\x7f\xc3\xa9"), "a\tb\nc??[31m??\xc3\xa9");
}

}  // namespace
}  // namespace diagnose
