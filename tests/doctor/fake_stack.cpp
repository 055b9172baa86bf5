#include "fake_stack.h"

#include <unistd.h>

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

void CopyFakes(const std::vector<std::string>& fakes, const std::string& dir) {
  for (const std::string& fake : fakes) {
    for (const auto& entry : fs::directory_iterator(fs::path(VIGIL_FAKES_DIR) / fake)) {
      fs::copy(entry.path(), fs::path(dir) / entry.path().filename(),
               fs::copy_options::copy_symlinks | fs::copy_options::overwrite_existing);
    }
  }
}

}  // namespace

FakeStack::FakeStack(const std::vector<std::string>& fakes) : dir_(MakeTempDir()) {
  CopyFakes(fakes, dir_);
  proc_dir_ = dir_ + "-proc-none";  // absent: no kernel driver
}

FakeStack::~FakeStack() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
  for (const std::string& d : other_dirs_) fs::remove_all(d, ec);
  fs::remove_all(proc_dir_, ec);
}

std::string FakeStack::AddOtherFolder(const std::vector<std::string>& fakes) {
  std::string dir = MakeTempDir();
  CopyFakes(fakes, dir);
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
  options.lib_dirs = {dir_};
  SearchEnvironment env;
  env.ld_library_path.clear();
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
