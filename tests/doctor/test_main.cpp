// The test binary doubles as the live check's child: RunLiveCheck re-executes
// /proc/self/exe with --child-probe, as `vigil doctor` does.
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "doctor/live/live_check.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--child-probe") == 0) {
    vigil::doctor::LiveCheckChildArgs args;
    for (int i = 2; i + 1 < argc; i += 2) {
      std::string flag = argv[i];
      if (flag == "--cudnn") args.cudnn_path = argv[i + 1];
      if (flag == "--cudart") args.cudart_path = argv[i + 1];
      if (flag == "--result-fd") args.result_fd = std::atoi(argv[i + 1]);
    }
    return vigil::doctor::RunLiveCheckChild(args);
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
