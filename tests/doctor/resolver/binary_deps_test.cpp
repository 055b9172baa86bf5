// ResolveBinary: breadth-first DT_NEEDED walk with the loader's de-dup, and
// the findings users need (missing library, wheel folder not on the path,
// cuDNN 8 vs 9, wrong class, other versions, mixed cuDNN folders).
#include "doctor/resolver/binary_deps.h"

#include <gtest/gtest.h>

#include <iostream>

#include "test_util.h"

namespace vigil::doctor {
namespace {

using testing::PlaceFake;
using testing::TempDir;
namespace fs = std::filesystem;

// An environment that sees only the test's folders.
SearchEnvironment Isolated() {
  SearchEnvironment env;
  env.ld_so_cache.clear();
  env.default_dirs.clear();
  return env;
}

const BinaryFinding* FindingWithId(const BinaryReport& r, const std::string& id) {
  for (const BinaryFinding& f : r.findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

const BinaryDependency* Dep(const BinaryReport& r, const std::string& name) {
  for (const BinaryDependency& d : r.dependencies) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

std::string Dump(const BinaryReport& r) { return FormatBinaryReport(r); }

TEST(BinaryDeps, BreadthFirstWithSonameDedup) {
  TempDir tmp;
  const std::string app = PlaceFake(VIGIL_FAKE_APP, tmp.path(), "libvapp.so.1");  // RPATH $ORIGIN/lib
  PlaceFake(VIGIL_FAKE_RUNPATH, tmp.Sub("lib"), "libvrunpath.so.1");
  PlaceFake(VIGIL_FAKE_LEAF, tmp.Sub("lib"), "libvleaf.so.1");
  Result<BinaryReport> r = ResolveBinary(app, Isolated());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->dependencies.size(), 2u) << Dump(*r);
  EXPECT_EQ(r->dependencies[0].name, "libvrunpath.so.1");
  EXPECT_EQ(r->dependencies[1].name, "libvleaf.so.1");
  EXPECT_EQ(r->dependencies[1].found_via, "RPATH");
  EXPECT_EQ(r->dependencies[1].needed_by.size(), 2u);  // app, then the runpath library
  EXPECT_EQ(r->dependencies[1].depth, 1);
  EXPECT_TRUE(r->findings.empty()) << Dump(*r);
  EXPECT_FALSE(r->truncated);
}

TEST(BinaryDeps, RpathInheritedFromLoadingObject) {
  TempDir tmp;
  const std::string app = PlaceFake(VIGIL_FAKE_APP2, tmp.path(), "libvapp2.so.1");  // RPATH $ORIGIN/lib
  PlaceFake(VIGIL_FAKE_MID, tmp.Sub("lib"), "libvmid.so.1");
  PlaceFake(VIGIL_FAKE_LEAF, tmp.Sub("lib"), "libvleaf.so.1");
  Result<BinaryReport> r = ResolveBinary(app, Isolated());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->dependencies.size(), 2u) << Dump(*r);
  EXPECT_EQ(r->dependencies[0].found_via, "RPATH");
  EXPECT_EQ(r->dependencies[1].name, "libvleaf.so.1");
  EXPECT_EQ(r->dependencies[1].found_via, "RPATH of a loading object");
  EXPECT_EQ(r->dependencies[1].depth, 2);
  EXPECT_EQ(r->dependencies[1].needed_by, std::vector<std::string>{tmp.path() + "/lib/libvmid.so.1"});
}

TEST(BinaryDeps, LimitsTruncate) {
  TempDir tmp;
  const std::string app = PlaceFake(VIGIL_FAKE_APP, tmp.path(), "libvapp.so.1");
  PlaceFake(VIGIL_FAKE_RUNPATH, tmp.Sub("lib"), "libvrunpath.so.1");
  PlaceFake(VIGIL_FAKE_LEAF, tmp.Sub("lib"), "libvleaf.so.1");
  Result<BinaryReport> r = ResolveBinary(app, Isolated(), ResolveLimits{.max_depth = 4, .max_libraries = 1});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->truncated);
  EXPECT_EQ(r->dependencies.size(), 1u);
  EXPECT_NE(FindingWithId(*r, "binary.walk_truncated"), nullptr);
}

TEST(BinaryDeps, MissingLibrary) {
  TempDir tmp;
  const std::string user = PlaceFake(VIGIL_FAKE_USER9, tmp.path(), "libvuser9.so.1");
  SearchEnvironment env = Isolated();
  env.ld_library_path = {tmp.Sub("empty")};
  Result<BinaryReport> r = ResolveBinary(user, env);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const BinaryDependency* d = Dep(*r, "libcudnn.so.9");
  ASSERT_NE(d, nullptr);
  EXPECT_FALSE(d->path);
  EXPECT_EQ(d->cuda_family, "cudnn");
  EXPECT_EQ(d->major_version, 9);
  const BinaryFinding* f = FindingWithId(*r, "binary.library_missing");
  ASSERT_NE(f, nullptr) << Dump(*r);
  EXPECT_EQ(f->severity, "error");
  EXPECT_NE(f->summary.find("libcudnn.so.9"), std::string::npos);
  bool lists_search = false;
  for (const std::string& e : f->evidence) lists_search |= e.find(tmp.path() + "/empty") != std::string::npos;
  EXPECT_TRUE(lists_search) << Dump(*r);
}

// onnxruntime#25609: pip's nvidia-cudnn-cu12 installed, its folder not on
// LD_LIBRARY_PATH: "libcudnn.so.9: cannot open shared object file".
TEST(BinaryDeps, WheelFolderNotOnSearchPath) {
  TempDir tmp;
  const std::string user = PlaceFake(VIGIL_FAKE_USER9, tmp.path(), "libvuser9.so.1");
  const std::string wheel = tmp.Sub("venv/lib/python3.11/site-packages/nvidia/cudnn/lib");
  PlaceFake(VIGIL_FAKE_CUDNN9, wheel, "libcudnn.so.9");
  SearchEnvironment env = Isolated();
  env.extra_dirs = {wheel};
  Result<BinaryReport> r = ResolveBinary(user, env);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const BinaryFinding* f = FindingWithId(*r, "binary.library_not_on_search_path");
  ASSERT_NE(f, nullptr) << Dump(*r);
  EXPECT_EQ(f->severity, "error");
  EXPECT_EQ(f->summary, "libcudnn.so.9 is missing for the loader, but a copy exists in " + wheel);
  EXPECT_NE(f->fix.find("LD_LIBRARY_PATH=" + wheel), std::string::npos) << f->fix;
}

TEST(BinaryDeps, NeedsCudnn8ButOnlyCudnn9Installed) {
  TempDir tmp;
  const std::string user = PlaceFake(VIGIL_FAKE_USER8, tmp.path(), "libvuser8.so.1");
  const std::string sys = tmp.Sub("sys");
  PlaceFake(VIGIL_FAKE_CUDNN9, sys, "libcudnn.so.9.1.0");
  fs::create_symlink("libcudnn.so.9.1.0", sys + "/libcudnn.so.9");
  SearchEnvironment env = Isolated();
  env.default_dirs = {sys};
  Result<BinaryReport> r = ResolveBinary(user, env);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const BinaryDependency* d = Dep(*r, "libcudnn.so.8");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->major_version, 8);
  const BinaryFinding* f = FindingWithId(*r, "binary.library_wrong_major");
  ASSERT_NE(f, nullptr) << Dump(*r);
  EXPECT_EQ(f->summary, "this binary needs libcudnn.so.8 (cuDNN 8) but only cuDNN 9 is installed (" + sys +
                            "/libcudnn.so.9.1.0)");
  EXPECT_NE(f->fix.find("install cuDNN 8"), std::string::npos);
  EXPECT_NE(f->fix.find("cuDNN 9"), std::string::npos);
}

TEST(BinaryDeps, WrongClassSkippedAndOnlyWrongClass) {
  TempDir tmp;
  const std::string lib = PlaceFake(VIGIL_FAKE_RUNPATH, tmp.path(), "libvrunpath.so.1");  // RUNPATH $ORIGIN/rp
  PlaceFake(VIGIL_FAKE_LEAF, tmp.Sub("rp"), "libvleaf.so.1");
  const std::string i386 = tmp.Sub("i386") + "/libvleaf.so.1";
  testing::WriteBytes(i386, testing::Elf32Header());
  SearchEnvironment env = Isolated();
  env.ld_library_path = {tmp.path() + "/i386"};
  Result<BinaryReport> r = ResolveBinary(lib, env);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const BinaryFinding* f = FindingWithId(*r, "binary.wrong_class_skipped");
  ASSERT_NE(f, nullptr) << Dump(*r);
  EXPECT_EQ(f->severity, "warning");
  EXPECT_NE(f->summary.find(i386), std::string::npos);
  EXPECT_EQ(*Dep(*r, "libvleaf.so.1")->path, tmp.path() + "/rp/libvleaf.so.1");

  fs::remove(tmp.path() + "/rp/libvleaf.so.1");
  r = ResolveBinary(lib, env);
  ASSERT_TRUE(r.ok());
  f = FindingWithId(*r, "binary.library_missing");
  ASSERT_NE(f, nullptr) << Dump(*r);
  EXPECT_NE(f->summary.find("another ELF class"), std::string::npos) << f->summary;
}

TEST(BinaryDeps, LinkerScriptStopsTheLoader) {
  TempDir tmp;
  const std::string lib = PlaceFake(VIGIL_FAKE_RUNPATH, tmp.path(), "libvrunpath.so.1");
  PlaceFake(VIGIL_FAKE_LEAF, tmp.Sub("rp"), "libvleaf.so.1");
  testing::WriteText(tmp.Sub("scripts") + "/libvleaf.so.1", "/* GNU ld script */\nGROUP ( libvleaf.so.1.0 )\n");
  SearchEnvironment env = Isolated();
  env.ld_library_path = {tmp.path() + "/scripts"};
  Result<BinaryReport> r = ResolveBinary(lib, env);
  ASSERT_TRUE(r.ok());
  const BinaryFinding* f = FindingWithId(*r, "binary.library_unloadable");
  ASSERT_NE(f, nullptr) << Dump(*r);
  EXPECT_EQ(f->severity, "error");
  EXPECT_NE(f->summary.find("not an ELF file"), std::string::npos);
}

TEST(BinaryDeps, OtherVersionsNameTheWinner) {
  TempDir tmp;
  const std::string user = PlaceFake(VIGIL_FAKE_USER9, tmp.path(), "libvuser9.so.1");
  const std::string llp = tmp.Sub("llp"), toolkit = tmp.Sub("toolkit");
  PlaceFake(VIGIL_FAKE_CUDNN9, llp, "libcudnn.so.9.1.0");
  fs::create_symlink("libcudnn.so.9.1.0", llp + "/libcudnn.so.9");
  PlaceFake(VIGIL_FAKE_CUDNN9, toolkit, "libcudnn.so.9.19.0");
  fs::create_symlink("libcudnn.so.9.19.0", toolkit + "/libcudnn.so.9");
  SearchEnvironment env = Isolated();
  env.ld_library_path = {llp};
  env.extra_dirs = {toolkit};
  Result<BinaryReport> r = ResolveBinary(user, env);
  ASSERT_TRUE(r.ok());
  const BinaryFinding* f = FindingWithId(*r, "binary.other_versions_present");
  ASSERT_NE(f, nullptr) << Dump(*r);
  EXPECT_EQ(f->severity, "warning");  // cuDNN: a version mix-up matters
  EXPECT_NE(f->summary.find(llp + "/libcudnn.so.9.1.0 (9.1.0) via LD_LIBRARY_PATH"), std::string::npos) << f->summary;
  EXPECT_NE(f->summary.find("libcudnn.so.9.19.0 (9.19.0)"), std::string::npos) << f->summary;
}

TEST(BinaryDeps, MixedCudnnFolders) {
  TempDir tmp;
  const std::string user = PlaceFake(VIGIL_FAKE_USER_MIXED, tmp.path(), "libvmixed.so.1");
  PlaceFake(VIGIL_FAKE_CUDNN9, tmp.Sub("system"), "libcudnn.so.9");
  PlaceFake(VIGIL_FAKE_CUDNN_OPS9, tmp.Sub("wheel"), "libcudnn_ops.so.9");
  SearchEnvironment env = Isolated();
  env.ld_library_path = {tmp.path() + "/system", tmp.path() + "/wheel"};
  Result<BinaryReport> r = ResolveBinary(user, env);
  ASSERT_TRUE(r.ok());
  const BinaryFinding* f = FindingWithId(*r, "binary.cudnn_mixed_folders");
  ASSERT_NE(f, nullptr) << Dump(*r);
  EXPECT_EQ(f->evidence.size(), 2u);
}

TEST(BinaryDeps, NonElfBinaryIsAStatus) {
  TempDir tmp;
  testing::WriteText(tmp.path() + "/tool.sh", "#!/bin/sh\necho hi\n");
  Result<BinaryReport> r = ResolveBinary(tmp.path() + "/tool.sh", Isolated());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().summary().find("not an ELF file"), std::string::npos) << r.status().summary();
}

TEST(BinaryDeps, FamilyAndMajor) {
  EXPECT_EQ(CudaFamilyOf("libcudnn_ops.so.9"), "cudnn");
  EXPECT_EQ(CudaFamilyOf("libcublasLt.so.12"), "cublasLt");
  EXPECT_EQ(CudaFamilyOf("libcublas.so.12"), "cublas");
  EXPECT_EQ(CudaFamilyOf("libcudart.so.13"), "cudart");
  EXPECT_EQ(CudaFamilyOf("libcuda.so.1"), "cuda");
  EXPECT_EQ(CudaFamilyOf("libnvrtc.so.12"), "nvrtc");
  EXPECT_EQ(CudaFamilyOf("libcurand.so.10"), "");
  EXPECT_EQ(SonameMajor("libcudnn_cnn_infer.so.8"), 8);
  EXPECT_EQ(SonameMajor("libcudnn.so.9.14.0"), 9);
  EXPECT_EQ(SonameMajor("libcudnn.so"), std::nullopt);
}

// The machine's real cuDNN: `readelf -d libcudnn_cnn.so.9` lists NEEDED
// libcudnn_ops.so.9 and libcudnn_graph.so.9, RUNPATH $ORIGIN:...
TEST(BinaryDeps, RealCudnnCnn) {
  const std::string path = "/usr/local/cuda/lib64/libcudnn_cnn.so.9";
  if (!fs::exists(path)) GTEST_SKIP() << "no " << path;
  Result<BinaryReport> r = ResolveBinary(path, SearchEnvironment::FromProcess());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::cout << FormatBinaryReport(*r);
  for (const char* name : {"libcudnn_graph.so.9", "libcudnn_ops.so.9"}) {
    const BinaryDependency* d = Dep(*r, name);
    ASSERT_NE(d, nullptr) << name;
    ASSERT_TRUE(d->path) << name;
    EXPECT_EQ(d->major_version, 9);
  }
  const BinaryDependency* libc = Dep(*r, "libc.so.6");
  ASSERT_NE(libc, nullptr);
  EXPECT_TRUE(libc->path);
  EXPECT_FALSE(r->elf.build_id.empty());
}

}  // namespace
}  // namespace vigil::doctor
