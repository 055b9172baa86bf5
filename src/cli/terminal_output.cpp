#include "cli/terminal_output.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <string_view>

#include "base/printable.h"

namespace vigil::cli {
namespace {

struct Sink {
  int fd;
  PrintableStream stream;
};

void WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a closed pipe: nothing more can be said
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

ssize_t WriteFiltered(void* cookie, const char* data, size_t size) {
  auto* sink = static_cast<Sink*>(cookie);
  WriteAll(sink->fd, sink->stream.Feed({data, size}));
  return static_cast<ssize_t>(size);
}

int CloseFiltered(void* cookie) {
  auto* sink = static_cast<Sink*>(cookie);
  WriteAll(sink->fd, sink->stream.Finish());
  delete sink;
  return 0;
}

FILE* Filtered(FILE* original, int mode) {
  std::fflush(original);
  cookie_io_functions_t io{nullptr, WriteFiltered, nullptr, CloseFiltered};
  auto* sink = new Sink{fileno(original), {}};
  FILE* f = fopencookie(sink, "w", io);
  if (!f) {
    delete sink;
    return original;  // unfiltered rather than silent
  }
  std::setvbuf(f, nullptr, mode, mode == _IONBF ? 0 : BUFSIZ);
  return f;
}

}  // namespace

void FilterStandardStreams() {
  stdout = Filtered(stdout, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF);
  stderr = Filtered(stderr, _IONBF);
}

}  // namespace vigil::cli
