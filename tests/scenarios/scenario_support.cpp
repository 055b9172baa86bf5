#include "scenario_support.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <utility>

#include "support/onnx_builder.h"

extern char** environ;

namespace vigil::scenarios {
namespace fs = std::filesystem;

namespace {

std::vector<std::pair<std::string, std::string>>& Rows() {
  static std::vector<std::pair<std::string, std::string>> rows;
  return rows;
}

fs::path ScratchDir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("vigil_scenarios_" + std::to_string(::getpid()));
    fs::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(fs::temp_directory_path() / ("vigil_scenarios_" + std::to_string(::getpid())), ec);
    });
    return d;
  }();
  return dir;
}

}  // namespace

fs::path Scratch(const std::string& name) { return ScratchDir() / name; }

std::string WriteNpy(const std::string& name, const std::string& descr, const std::vector<int64_t>& shape,
                     size_t values, size_t element_bytes) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.resize(dims.size() - 2);
  if (shape.size() == 1) dims.resize(dims.size() - 1);
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  header += std::string(63 - (10 + header.size()) % 64, ' ') + "\n";
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes.push_back(static_cast<char>(header.size() & 0xFF));
  bytes.push_back(static_cast<char>(header.size() >> 8));
  bytes += header;
  bytes.append(values * element_bytes, '\0');
  const fs::path p = Scratch(name);
  testing::WriteFile(p, bytes);
  return p.string();
}

std::string WritePb(const std::string& name, const std::vector<int64_t>& dims, size_t values) {
  const fs::path p = Scratch(name);
  testing::WriteFile(p, testing::MakeFloatTensor("image", dims, std::vector<float>(values, 0.25f)));
  return p.string();
}

std::string FakeLibraryFolder(const std::string& name, const std::vector<std::string>& targets) {
  const fs::path dir = Scratch(name);
  fs::create_directories(dir);
  for (const std::string& t : targets) {
    for (const auto& entry : fs::directory_iterator(fs::path(VIGIL_FAKES_DIR) / t)) {
      fs::copy(entry.path(), dir / entry.path().filename(),
               fs::copy_options::copy_symlinks | fs::copy_options::overwrite_existing);
    }
  }
  return dir.string();
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

ProgramResult RunProgram(const std::vector<std::string>& args) {
  static int counter = 0;
  const std::string out_path = Scratch("program_out" + std::to_string(counter)).string();
  const std::string err_path = Scratch("program_err" + std::to_string(counter++)).string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> store = args;
  std::vector<char*> argv;
  for (std::string& a : store) argv.push_back(a.data());
  argv.push_back(nullptr);
  ProgramResult r;
  pid_t pid = 0;
  const int started = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (started != 0) return r;
  int status = 0;
  waitpid(pid, &status, 0);
  r.ok = WIFEXITED(status);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto slurp = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

void Record(const std::string& failure_class, const std::string& first_line) {
  Rows().emplace_back(failure_class, first_line);
}

void PrintTable() {
  std::string table = "| class of failure | first line |\n|---|---|\n";
  for (const auto& [klass, line] : Rows()) {
    std::string cell;
    for (char c : line) cell += c == '|' ? std::string("\\|") : std::string(1, c);
    table += "| " + klass + " | `" + cell + "` |\n";
  }
  std::fputs(table.c_str(), stdout);
  std::ofstream(VIGIL_SCENARIO_TABLE) << table;
}

}  // namespace vigil::scenarios
