#include "fake_stack.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "doctor/rules/rules.h"

namespace fs = std::filesystem;

namespace vigil::doctor::testing {
namespace {

std::string MakeTempDir() {
  std::string pattern = (fs::temp_directory_path() / "vigil-doctor-XXXXXX").string();
  char* made = mkdtemp(pattern.data());
  return made ? std::string(made) : std::string();
}

// A file name with one number after ".so.": the SONAME link (libx.so.9).
bool IsSonameName(const std::string& name) {
  size_t so = name.find(".so.");
  return so != std::string::npos && name.find('.', so + 4) == std::string::npos;
}

void CopyFakes(const std::vector<std::string>& fakes, const std::string& dir, bool wheel_layout) {
  for (const std::string& fake : fakes) {
    for (const auto& entry : fs::directory_iterator(fs::path(VIGIL_FAKES_DIR) / fake)) {
      fs::path to = fs::path(dir) / entry.path().filename();
      if (!wheel_layout) {
        fs::copy(entry.path(), to, fs::copy_options::copy_symlinks | fs::copy_options::overwrite_existing);
      } else if (IsSonameName(entry.path().filename().string())) {
        fs::copy_file(fs::canonical(entry.path()), to, fs::copy_options::overwrite_existing);
      }
    }
  }
}

std::vector<std::string> SplitPath(const char* value) {
  std::vector<std::string> out;
  std::string text = value ? value : "";
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(':', pos);
    if (end == std::string::npos) end = text.size();
    if (end > pos) out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

}  // namespace

FakeStack::FakeStack(const std::vector<std::string>& fakes, const std::vector<std::string>& wheel_fakes)
    : dir_(MakeTempDir()) {
  CopyFakes(fakes, dir_, false);
  CopyFakes(wheel_fakes, dir_, true);
  proc_dir_ = dir_ + "-proc-none";  // absent: no kernel driver
}

FakeStack::~FakeStack() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
  for (const std::string& d : other_dirs_) fs::remove_all(d, ec);
  fs::remove_all(proc_dir_, ec);
}

std::string FakeStack::AddOtherFolder(const std::vector<std::string>& fakes, bool wheel_layout) {
  std::string dir = MakeTempDir();
  CopyFakes(fakes, dir, wheel_layout);
  other_dirs_.push_back(dir);
  return dir;
}

void FakeStack::SetPhysicalGpus(int count) {
  proc_dir_ = dir_ + "-proc";
  fs::create_directories(proc_dir_);
  for (int i = 0; i < count; ++i) fs::create_directories(proc_dir_ + "/0000:0" + std::to_string(i) + ":00.0");
}

void FakeStack::AddFile(const std::string& name) { std::ofstream(dir_ + "/" + name) << "x"; }

ProbeOptions FakeStack::Options() const {
  ProbeOptions options;
  SearchEnvironment env;
  env.ld_library_path.clear();
  // LD_LIBRARY_PATH entries that are this stack's folders (never the test
  // machine's own): searched first, as the loader does.
  for (const std::string& d : SplitPath(std::getenv("LD_LIBRARY_PATH"))) {
    if (std::find(other_dirs_.begin(), other_dirs_.end(), d) == other_dirs_.end()) continue;
    env.ld_library_path.push_back(d);
    options.lib_dirs.push_back(d);
  }
  options.lib_dirs.push_back(dir_);
  env.ld_so_cache = dir_ + "/no-ld.so.cache";
  env.default_dirs.clear();
  env.extra_dirs = other_dirs_;
  options.search = env;
  options.proc_gpus_dir = proc_dir_;
  options.timeout_ms = 10000;
  return options;
}

std::vector<Finding> FakeStack::Findings() const { return RunRules(Probe()); }

std::vector<std::string> HealthyStack() {
  std::vector<std::string> stack = {"fake_cuda_h100", "fake_cudart_13", "fake_cudnn_9_14", "fake_cublaslt_13"};
  for (const char* sub : {"graph", "engines_precompiled", "engines_runtime_compiled", "heuristic", "ops", "cnn", "adv"}) {
    stack.push_back(std::string("fake_cudnn_") + sub + "_9_14");
  }
  return stack;
}

std::vector<std::string> Replace(std::vector<std::string> stack, const std::string& from, const std::string& to) {
  for (auto it = stack.begin(); it != stack.end(); ++it) {
    if (*it != from) continue;
    if (to.empty()) {
      stack.erase(it);
    } else {
      *it = to;
    }
    break;
  }
  return stack;
}

const Finding* FindById(const std::vector<Finding>& findings, const std::string& id) {
  for (const Finding& f : findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

std::string Ids(const std::vector<Finding>& findings) {
  std::string out;
  for (const Finding& f : findings) out += f.id + "(" + std::string(SeverityName(f.severity)) + ") ";
  return out;
}

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) old_ = old;
  if (value) {
    setenv(name, value, 1);
  } else {
    unsetenv(name);
  }
}

ScopedEnv::~ScopedEnv() {
  if (old_) {
    setenv(name_.c_str(), old_->c_str(), 1);
  } else {
    unsetenv(name_.c_str());
  }
}

}  // namespace vigil::doctor::testing
