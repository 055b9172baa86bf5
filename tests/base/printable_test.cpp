// base/printable.h: what may reach a terminal from a file.
#include "base/printable.h"

#include <string>

#include <gtest/gtest.h>

#include "base/diagnosis_render.h"
#include "base/status.h"

namespace vigil {
namespace {

// No byte below 0x20 but newline and tab, no DEL, and valid UTF-8 with no C1
// control: what every printable text must be.
bool Clean(const std::string& s, bool newlines_ok) {
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n' || c == '\t') {
      if (!newlines_ok) return false;
    } else if (c < 0x20 || c == 0x7f) {
      return false;
    } else if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9F) {
      return false;
    }
  }
  return true;
}

TEST(Printable, KeepsTextAndValidUtf8) {
  EXPECT_EQ(Printable("conv1/weight:0"), "conv1/weight:0");
  EXPECT_EQ(Printable("Ã©tÃ© — 形状 ✓ 🙂"), "Ã©tÃ© — 形状 ✓ 🙂");
  EXPECT_EQ(Printable(""), "");
}

TEST(Printable, EscapesControlBytes) {
  EXPECT_EQ(Printable("a\x1b[2Jb"), "a\\x1b[2Jb");                 // clear screen
  EXPECT_EQ(Printable("x\x1b]0;title\x07y"), "x\\x1b]0;title\\x07y");  // window title (OSC)
  EXPECT_EQ(Printable(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(Printable("a\rb\x7f"), "a\\x0db\\u007f");
  EXPECT_EQ(Printable("two\nlines\ttab"), "two\\x0alines\\x09tab");
  EXPECT_EQ(Printable("two\nlines\ttab", Newlines::kKeep), "two\nlines\ttab");
  EXPECT_EQ(Printable("c1 \xc2\x9b" "31m"), "c1 \\u009b31m");  // CSI as one C1 character
}

TEST(Printable, EscapesEveryInvalidUtf8Form) {
  EXPECT_EQ(Printable("\xff"), "\\xff");
  EXPECT_EQ(Printable("a\x80" "b"), "a\\x80b");                    // stray continuation byte
  EXPECT_EQ(Printable("\xc0\xaf"), "\\xc0\\xaf");                 // overlong '/'
  EXPECT_EQ(Printable("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");        // overlong, 3 bytes
  EXPECT_EQ(Printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");        // a surrogate
  EXPECT_EQ(Printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  EXPECT_EQ(Printable("end\xe2\x9c"), "end\\xe2\\x9c");            // cut short
  EXPECT_EQ(Printable("\xe2(\xa1"), "\\xe2(\\xa1");
}

TEST(PrintableStream, SplitCharactersAndColoursSurviveAnyCut) {
  const std::string text = "ok \033[32m\xe2\x9c\x93\033[0m caf\xc3\xa9 \xf0\x9f\x99\x82 bad \033]0;x\x07 \xff end\n";
  const std::string whole = [&] {
    PrintableStream s;
    return s.Feed(text) + s.Finish();
  }();
  EXPECT_EQ(whole, "ok \033[32m\xe2\x9c\x93\033[0m caf\xc3\xa9 \xf0\x9f\x99\x82 bad \\x1b]0;x\\x07 \\xff end\n");
  for (size_t piece = 1; piece <= 5; ++piece) {
    PrintableStream s;
    std::string out;
    for (size_t i = 0; i < text.size(); i += piece) out += s.Feed(text.substr(i, piece));
    out += s.Finish();
    EXPECT_EQ(out, whole) << "pieces of " << piece;
  }
  PrintableStream cut;
  EXPECT_EQ(cut.Feed("x\xe2\x9c"), "x");  // waits for the rest of the character
  EXPECT_EQ(cut.Finish(), "\\xe2\\x9c");   // which never comes
}

TEST(Printable, EveryByteSequenceComesOutClean) {
  // All two-byte strings and a spread of three-byte ones: the output is
  // always clean, and clean text is a fixed point.
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      std::string s{static_cast<char>(a), static_cast<char>(b)};
      if (a % 17 == 0) s += static_cast<char>((a + b) & 0xff);
      const std::string p = Printable(s);
      ASSERT_TRUE(Clean(p, false)) << a << " " << b;
      ASSERT_EQ(Printable(p), p);
    }
  }
}

TEST(Printable, DiagnosesAreRenderedPrintable) {
  Status s = InvalidInputError("the model has no input named '{}'", "evil\x1b[2J\xff")
                 .WithFact("inputs", "a\x1b[31m, b")
                 .WithFact("log", "line one\nline two")
                 .WithCause("\x9b", "evidence\x07")
                 .WithFix("rename it\r")
                 .WithFix("rename it\r")      // two layers, the same fix
                 .WithCause("\x9b", "again");  // and the same cause
  const std::string text = RenderText(s.diagnosis());
  EXPECT_TRUE(Clean(text, true)) << text;
  EXPECT_NE(text.find("evil\\x1b[2J\\xff"), std::string::npos) << text;
  EXPECT_NE(text.find("line one\nline two"), std::string::npos) << text;  // a fact's own lines stay
  EXPECT_EQ(text.find("rename it"), text.rfind("rename it")) << text;     // said once
  EXPECT_EQ(text.find("\\x9b"), text.rfind("\\x9b")) << text;
  const std::string json = ToJson(s.diagnosis()).dump();  // strict: throws on invalid UTF-8
  EXPECT_NE(json.find("evil\\\\x1b[2J\\\\xff"), std::string::npos) << json;
}

}  // namespace
}  // namespace vigil
