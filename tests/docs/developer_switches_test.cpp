// docs/api.md says the library reads no VIGIL_* environment variable beyond
// its "Developer switches" table: every getenv("VIGIL_...") and
// DevSwitchOn("VIGIL_...") (base/dev_switch.h) in src/ must be named there, so that a new measurement switch cannot go undocumented.
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace {

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(DeveloperSwitches, EveryVariableTheLibraryReadsIsInTheTable) {
  const std::string api = ReadFile(VIGIL_SOURCE_DIR "/docs/api.md");
  const size_t begin = api.find("## Developer switches");
  ASSERT_NE(begin, std::string::npos) << "docs/api.md has no '## Developer switches' section";
  const size_t end = api.find("\n## ", begin + 1);
  const std::string table = api.substr(begin, end == std::string::npos ? std::string::npos : end - begin);

  const std::regex read(R"((?:getenv|DevSwitchOn)\(\s*"(VIGIL_[A-Z0-9_]+)\")");
  std::set<std::string> names;
  for (const auto& e : std::filesystem::recursive_directory_iterator(VIGIL_SOURCE_DIR "/src")) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".cpp" && ext != ".cu" && ext != ".h" && ext != ".cuh")) continue;
    const std::string text = ReadFile(e.path());
    for (std::sregex_iterator m(text.begin(), text.end(), read), stop; m != stop; ++m) names.insert((*m)[1].str());
  }
  // The scan itself works: the CUDA module's path (getenv) and the fusion
  // switches (DevSwitchOn) are read in src/ today.
  EXPECT_TRUE(names.count("VIGIL_CUDA_MODULE") && names.count("VIGIL_FUSE_ATTENTION")) << names.size()
                                                                                        << " names found";
  for (const std::string& name : names) {
    const bool listed = table.find("`" + name + "`") != std::string::npos ||
                        table.find("`" + name + "=") != std::string::npos;
    EXPECT_TRUE(listed) << name << " is read by the library (src/) but not listed under 'Developer switches' in "
                        << "docs/api.md";
  }
}

}  // namespace
