#include <cstdio>

#include "base/diagnosis_render.h"
#include "cli/command.h"

namespace vigil::cli {

int ReportFailure(const Status& status, bool json) {
  if (status.ok()) return kExitOk;
  if (json) {
    std::string text = ToJson(status).dump(2);
    std::fprintf(stdout, "%s\n", text.c_str());
  } else {
    std::string text = RenderText(status.diagnosis());
    std::fprintf(stderr, "%s", text.c_str());
  }
  return ExitCodeFor(status);
}

}  // namespace vigil::cli
