// The module loader against fake backend modules.
#include <dlfcn.h>

#include <gtest/gtest.h>

#include "doctor/module_loader.h"
#include "fake_stack.h"

namespace vigil::doctor {
namespace {

std::string Module(const std::string& fake) {
  return std::string(VIGIL_FAKES_DIR) + "/" + fake + "/libvigil_cuda.so.1";
}

// The fake module needs libcudnn.so.8; a machine that has one installed
// cannot show the failure.
bool SystemHasCudnn8() {
  void* h = dlopen("libcudnn.so.8", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (h == nullptr) h = dlopen("libcudnn.so.8", RTLD_LAZY | RTLD_LOCAL);
  return h != nullptr;
}

ModuleLoadOptions Isolated(const testing::FakeStack& stack) {
  ModuleLoadOptions options;
  options.probe = stack.Options();
  return options;
}

TEST(ModuleLoader, LoadsAGoodModule) {
  Result<LoadedModule> m = LoadBackendModule(Module("fake_module_ok"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_STREQ(m->entry->name, "cuda");
}

TEST(ModuleLoader, MissingFile) {
  Result<LoadedModule> m = LoadBackendModule("/nonexistent/libvigil_cuda.so");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kEnvironment);
  EXPECT_NE(m.status().summary().find("cannot load backend module"), std::string::npos);
}

TEST(ModuleLoader, MissingDependencyRunsTheDoctorForIt) {
  if (SystemHasCudnn8()) GTEST_SKIP() << "libcudnn.so.8 is installed here";
  // The module needs libcudnn.so.8; the machine (a fake one) has no cuDNN.
  testing::FakeStack stack({"fake_cuda_h100", "fake_cudart_13", "fake_cublaslt_13"});
  Result<LoadedModule> m = LoadBackendModule(Module("fake_module_needs_cudnn"), Isolated(stack));
  ASSERT_FALSE(m.ok());
  const Diagnosis& d = m.status().diagnosis();
  bool names_missing = false;
  for (const Fact& f : d.facts) names_missing |= f.name == "missing library" && f.value == "libcudnn.so.8";
  EXPECT_TRUE(names_missing) << m.status().ToString();
  bool doctor_cause = false;
  for (const Cause& c : d.causes) doctor_cause |= c.evidence == "doctor finding cudnn.missing";
  EXPECT_TRUE(doctor_cause);
  EXPECT_FALSE(d.fixes.empty());
}

TEST(ModuleLoader, MissingDependencyThatTheDoctorCanFind) {
  if (SystemHasCudnn8()) GTEST_SKIP() << "libcudnn.so.8 is installed here";
  // cuDNN 8 exists (in the fake stack), but not on the module's search path.
  testing::FakeStack stack({"fake_cuda_h100", "fake_cudart_12", "fake_cudnn_8_9"});
  Result<LoadedModule> m = LoadBackendModule(Module("fake_module_needs_cudnn"), Isolated(stack));
  ASSERT_FALSE(m.ok());
  bool search_path_cause = false;
  for (const Cause& c : m.status().diagnosis().causes) {
    search_path_cause |= c.what.find("not on the module's search path") != std::string::npos;
  }
  EXPECT_TRUE(search_path_cause) << m.status().ToString();
}

TEST(ModuleLoader, MissingEntrySymbol) {
  Result<LoadedModule> m = LoadBackendModule(Module("fake_module_nosym"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().summary().find("vigil_backend_entry"), std::string::npos);
}

TEST(ModuleLoader, WrongAbiVersion) {
  Result<LoadedModule> m = LoadBackendModule(Module("fake_module_abi"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().summary().find("ABI version 99"), std::string::npos) << m.status().summary();
}

TEST(ModuleLoader, ModuleProbeRefuses) {
  Result<LoadedModule> m = LoadBackendModule(Module("fake_module_refuses"));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().summary().find("cannot run here: no GPU with compute capability"), std::string::npos)
      << m.status().summary();
}

TEST(ModuleLoader, ProbeCanBeLeftOutToReadTheTables) {
  // tools/ops_doc reads the kernel table on machines without a GPU.
  ModuleLoadOptions options;
  options.run_module_probe = false;
  Result<LoadedModule> m = LoadBackendModule(Module("fake_module_refuses"), options);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_STREQ(m->entry->name, "cuda");
}

TEST(ModuleLoader, ParsesMissingLibraryFromDlerror) {
  EXPECT_EQ(MissingLibraryIn("libcudnn.so.9: cannot open shared object file: No such file or directory"),
            "libcudnn.so.9");
  EXPECT_EQ(MissingLibraryIn("/a/b/libx.so: cannot open shared object file: No such file"), "libx.so");
  EXPECT_FALSE(MissingLibraryIn("undefined symbol: foo").has_value());
}

}  // namespace
}  // namespace vigil::doctor
