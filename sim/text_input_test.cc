#include "sim/text_input.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "store/test_dir.h"  // a fresh /tmp directory, removed afterwards

namespace hg::sim {
namespace {

std::vector<std::pair<int, std::string>> AllLines(std::string_view text) {
  std::vector<std::pair<int, std::string>> out;
  TextLines lines(text);
  std::string_view line;
  while (lines.Next(&line)) out.emplace_back(lines.number(), std::string(line));
  return out;
}

TEST(TextLines, NumbersLinesAndDropsByteOrderMarkAndCarriageReturns) {
  using L = std::vector<std::pair<int, std::string>>;
  EXPECT_EQ(AllLines("\xEF\xBB\xBF"
                     "a,b\r\n\r\n c \n"),
            (L{{1, "a,b"}, {2, ""}, {3, " c "}}));
  EXPECT_EQ(AllLines("last line without a break"), (L{{1, "last line without a break"}}));
  EXPECT_EQ(AllLines(""), L{});
  EXPECT_EQ(AllLines("\n"), (L{{1, ""}}));
  // Only a '\r' right before the break goes; one inside a line stays.
  EXPECT_EQ(AllLines("x\ry\r\n"), (L{{1, "x\ry"}}));
}

TEST(TextInput, NumbersMustBeTheWholeField) {
  EXPECT_EQ(ToInt("42"), 42);
  EXPECT_EQ(ToInt("-7"), -7);
  EXPECT_FALSE(ToInt(""));
  EXPECT_FALSE(ToInt("4 2"));
  EXPECT_FALSE(ToInt("42x"));
  EXPECT_FALSE(ToInt("1.5"));
  EXPECT_FALSE(ToInt("99999999999999999999"));
  EXPECT_EQ(ToNumber("1.5"), 1.5);
  EXPECT_EQ(ToNumber("3"), 3.0);
  EXPECT_FALSE(ToNumber(""));
  EXPECT_FALSE(ToNumber("1.5 "));
  EXPECT_FALSE(ToNumber("inf"));
  EXPECT_FALSE(ToNumber("nan"));
}

TEST(TextInput, ReadTextFileNamesWhatIsWrong) {
  const store::TestDir dir;
  const std::string file = dir.File("f.csv");
  std::ofstream(file) << "a\r\nb\n";
  auto ok = ReadTextFile(file);
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_EQ(*ok, "a\r\nb\n");  // bytes as they are: line handling is TextLines' job

  auto missing = ReadTextFile(dir.File("nope.csv"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().reason, "no such file");
  EXPECT_EQ(missing.error().file, dir.File("nope.csv"));

  auto is_dir = ReadTextFile(dir.path());
  ASSERT_FALSE(is_dir);
  EXPECT_EQ(is_dir.error().reason, "is a directory, expected a file");
}

TEST(TextInput, AtNamesFileLineAndField) {
  const Error e = At("w.csv", 3, "gpus", "must be positive");
  EXPECT_EQ(e.file, "w.csv");
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.field, "gpus");
  EXPECT_EQ(e.reason, "must be positive");
}

}  // namespace
}  // namespace hg::sim
