// Text from outside vigil (names, doc strings and paths from model and
// tensor files, strings from libraries) made safe to print: a terminal must
// never receive a control sequence from a file, and JSON must stay valid
// UTF-8.
//
// Valid UTF-8 is kept as it is, except control characters. C0 controls (but
// newline and tab where the caller keeps them) and every byte that is not
// part of valid UTF-8 (stray continuation bytes, overlong forms, surrogates,
// code points past U+10FFFF, a truncated sequence) become the four
// characters \xNN; DEL and C1 (U+0080..U+009F) become \u00NN, a valid escape
// inside a JSON string too (JSON writers escape C0 themselves, not these).
#pragma once

#include <string>
#include <string_view>

namespace vigil {

enum class Newlines { kEscape, kKeep };

std::string Printable(std::string_view text, Newlines newlines = Newlines::kEscape);

// The same over a byte stream that arrives in pieces (a character may be cut
// between two pieces). Newlines and tabs are kept, and so are well-formed
// colour sequences (ESC '[' digits and ';' 'm', at most 16 bytes), which
// vigil writes itself and which can only change colours.
class PrintableStream {
 public:
  // The printable form of what can be decided so far.
  std::string Feed(std::string_view bytes);
  // The rest, at the end of the stream (an unfinished sequence is escaped).
  std::string Finish();

 private:
  std::string pending_;
};

}  // namespace vigil
