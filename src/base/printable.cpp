#include "base/printable.h"

#include <cstddef>

namespace vigil {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// A byte that is not text (C0 controls, bytes outside valid UTF-8): \xNN.
void Escape(unsigned char b, std::string& out) {
  out += "\\x";
  out += kHex[b >> 4];
  out += kHex[b & 15];
}

// A control character that is valid UTF-8 (DEL, C1): \u00NN, which is also a
// valid escape inside a JSON string, so a JSON document stays one.
void EscapeCodePoint(unsigned cp, std::string& out) {
  out += "\\u00";
  out += kHex[(cp >> 4) & 15];
  out += kHex[cp & 15];
}

// The length of the valid UTF-8 sequence at s (lead byte >= 0x80): 0 when it
// is not one, -1 when it may be one but the input ends first.
int Utf8Length(const unsigned char* s, size_t n) {
  const unsigned char c = s[0];
  int len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c == 0xE0) {
    len = 3, lo = 0xA0;  // no overlong forms
  } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
    len = 3;
  } else if (c == 0xED) {
    len = 3, hi = 0x9F;  // no surrogates
  } else if (c == 0xF0) {
    len = 4, lo = 0x90;
  } else if (c >= 0xF1 && c <= 0xF3) {
    len = 4;
  } else if (c == 0xF4) {
    len = 4, hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  for (int i = 1; i < len; ++i) {
    if (static_cast<size_t>(i) >= n) return -1;
    const unsigned char b = s[i];
    if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) return 0;
  }
  return len;
}

// ESC '[' (digits | ';')* 'm', at most 16 bytes: its length, 0 when the
// bytes at s (s[0] is ESC) are something else, -1 when the input ends first.
int ColourLength(const unsigned char* s, size_t n) {
  for (size_t i = 1; i < 16; ++i) {
    if (i >= n) return -1;
    const unsigned char b = s[i];
    if (i == 1) {
      if (b != '[') return 0;
    } else if (b == 'm') {
      return static_cast<int>(i + 1);
    } else if ((b < '0' || b > '9') && b != ';') {
      return 0;
    }
  }
  return 0;
}

// Appends the printable form of s[0, n) to out and returns how many bytes it
// took: all of them at the end of the input, else up to an unfinished
// sequence.
size_t Convert(const unsigned char* s, size_t n, bool keep_newlines, bool colours, bool at_end, std::string& out) {
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c == 0x1b && colours) {
      const int len = ColourLength(s + i, n - i);
      if (len < 0 && !at_end) return i;
      if (len > 0) {
        out.append(reinterpret_cast<const char*>(s + i), static_cast<size_t>(len));
        i += static_cast<size_t>(len);
      } else {
        Escape(c, out);
        ++i;
      }
      continue;
    }
    if (c < 0x20) {
      if (keep_newlines && (c == '\n' || c == '\t')) {
        out += static_cast<char>(c);
      } else {
        Escape(c, out);
      }
      ++i;
      continue;
    }
    if (c == 0x7f) {
      EscapeCodePoint(c, out);
      ++i;
      continue;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    const int len = Utf8Length(s + i, n - i);
    if (len < 0 && !at_end) return i;
    if (len <= 0) {
      Escape(c, out);
      ++i;
    } else if (c == 0xC2 && s[i + 1] <= 0x9F) {  // C1 controls, U+0080..U+009F
      EscapeCodePoint(s[i + 1], out);
      i += 2;
    } else {
      out.append(reinterpret_cast<const char*>(s + i), static_cast<size_t>(len));
      i += static_cast<size_t>(len);
    }
  }
  return i;
}

}  // namespace

std::string Printable(std::string_view text, Newlines newlines) {
  std::string out;
  out.reserve(text.size());
  Convert(reinterpret_cast<const unsigned char*>(text.data()), text.size(), newlines == Newlines::kKeep,
          /*colours=*/false, /*at_end=*/true, out);
  return out;
}

std::string PrintableStream::Feed(std::string_view bytes) {
  pending_.append(bytes);
  std::string out;
  out.reserve(pending_.size());
  const size_t used = Convert(reinterpret_cast<const unsigned char*>(pending_.data()), pending_.size(),
                              /*keep_newlines=*/true, /*colours=*/true, /*at_end=*/false, out);
  pending_.erase(0, used);
  return out;
}

std::string PrintableStream::Finish() {
  std::string out;
  Convert(reinterpret_cast<const unsigned char*>(pending_.data()), pending_.size(), true, true, true, out);
  pending_.clear();
  return out;
}

}  // namespace vigil
