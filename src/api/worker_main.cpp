// vigil-worker: the child process of an isolated session (isolated_session.h).
// Not for people; libvigil.so starts it as
//   vigil-worker --model PATH --config JSON [--load-only] --isolated-fds C,I,O
// It assembles the session from the parent's SessionConfig and serves one
// isolated run (isolation/crash_guard.h); with --load-only it loads the
// session and answers with the backends that run, without running it.
#include <cstdio>
#include <string>
#include <string_view>

#include "api/isolated_session.h"
#include "api/session_factory.h"
#include "isolation/crash_guard.h"

namespace {

int Usage(const char* why) {
  std::fprintf(stderr,
               "vigil-worker: %s\n"
               "vigil-worker is started by libvigil.so for sessions created with isolate on; it is not run by hand.\n"
               "usage: vigil-worker --model PATH --config JSON [--load-only] --isolated-fds C,I,O\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, config_json, fds_text;
  bool load_only = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    if (a == "--model") {
      if (!value(model)) return Usage("--model needs a path");
    } else if (a == "--config") {
      if (!value(config_json)) return Usage("--config needs the session options as JSON");
    } else if (a == "--isolated-fds") {
      if (!value(fds_text)) return Usage("--isolated-fds needs C,I,O");
    } else if (a == "--load-only") {
      load_only = true;
    } else {
      return Usage("unknown argument");
    }
  }
  if (model.empty() || config_json.empty() || fds_text.empty()) return Usage("--model, --config and --isolated-fds are required");
  auto fds = vigil::doctor::ParseIsolatedChildFds(fds_text);
  if (!fds) return Usage("--isolated-fds is not C,I,O");
  auto config = vigil::api::DecodeConfig(config_json);
  if (!config.ok()) return Usage(config.status().summary().c_str());
  config->isolate = false;
  vigil::doctor::SessionLoader load = [&]() -> vigil::Result<std::unique_ptr<vigil::runtime::Session>> {
    VIGIL_ASSIGN_OR_RETURN(vigil::api::AssembledSession assembled, vigil::api::AssembleSession(model, *config));
    return std::move(assembled.session);
  };
  return vigil::doctor::ServeIsolatedRun(*fds, load, load_only ? vigil::doctor::ServeMode::kLoadOnly
                                                                : vigil::doctor::ServeMode::kRun);
}
