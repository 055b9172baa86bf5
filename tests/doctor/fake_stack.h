// A temporary folder of fake GPU libraries for one test scenario, and the
// probe options that point the doctor at it and nowhere else.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "doctor/doctor.h"
#include "doctor/probe/probe.h"

namespace vigil::doctor::testing {

class FakeStack {
 public:
  // `fakes`: target names from tests/doctor/CMakeLists.txt, e.g. "fake_cudnn_9_14".
  // `wheel_fakes` are copied as a pip wheel has them: the real file under its
  // SONAME (libcudnn_ops.so.9), no versioned name, no links.
  explicit FakeStack(const std::vector<std::string>& fakes, const std::vector<std::string>& wheel_fakes = {});
  ~FakeStack();
  FakeStack(const FakeStack&) = delete;
  FakeStack& operator=(const FakeStack&) = delete;

  const std::string& dir() const { return dir_; }
  // Copies more fakes into a second folder that is searched for copies but
  // not loaded from (another cuDNN on the machine). While LD_LIBRARY_PATH
  // (ScopedEnv) names such a folder, Options() treats it as the loader does:
  // searched, and loaded from before dir().
  std::string AddOtherFolder(const std::vector<std::string>& fakes, bool wheel_layout = false);
  // Physical GPU count as /proc/driver/nvidia/gpus would show.
  void SetPhysicalGpus(int count);
  void AddFile(const std::string& name);

  ProbeOptions Options() const;
  StackSnapshot Probe() const { return ProbeStack(Options()); }
  // Probe + rules (no live check).
  std::vector<Finding> Findings() const;

 private:
  std::string dir_;
  std::vector<std::string> other_dirs_;
  std::string proc_dir_;
};

// The standard healthy stack: H100, driver 580 (CUDA 13.0), cudart 13.0,
// cuDNN 9.14 for CUDA 13 with all sub-libraries, cuBLASLt 13.1.
std::vector<std::string> HealthyStack();
// HealthyStack with `from` replaced by `to` ("" removes it).
std::vector<std::string> Replace(std::vector<std::string> stack, const std::string& from, const std::string& to);

const Finding* FindById(const std::vector<Finding>& findings, const std::string& id);
std::string Ids(const std::vector<Finding>& findings);

// Sets an environment variable for the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace vigil::doctor::testing
