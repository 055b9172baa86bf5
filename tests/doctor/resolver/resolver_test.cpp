// ResolveLibrary follows the loader's order: RPATH (only without RUNPATH),
// LD_LIBRARY_PATH, RUNPATH, ld.so.cache, default folders; skips files of
// another ELF class; stops at non-ELF files. FindAllCopies de-duplicates.
#include "doctor/resolver/library_resolver.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>

#include "test_util.h"

namespace vigil::doctor {
namespace {

using testing::PlaceFake;
using testing::TempDir;
namespace fs = std::filesystem;

constexpr const char* kLeaf = "libvleaf.so.1";

// Restores an environment variable when the test ends.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// One folder per search step, each with a copy of the leaf library, and a
// requester placed in `origin` (its $ORIGIN).
class ResolverOrder : public ::testing::Test {
 protected:
  void SetUp() override {
    origin_ = tmp_.Sub("origin");
    env_.ld_so_cache = tmp_.path() + "/ld.so.cache";
    env_.default_dirs = {tmp_.Sub("default")};
    env_.ld_library_path = {tmp_.Sub("llp")};
    for (const char* dir : {"origin/rp", "llp", "cache", "default"}) PlaceFake(VIGIL_FAKE_LEAF, tmp_.Sub(dir), kLeaf);
    testing::WriteBytes(env_.ld_so_cache,
                        testing::EncodeLdSoCache({{kLeaf, tmp_.path() + "/i386/" + kLeaf, 0x0003, 0},
                                                  {kLeaf, tmp_.path() + "/cache/" + kLeaf, 0x0303, 0}},
                                                 false, true));
  }

  ElfInfo Requester(const char* fake) {
    const std::string path = PlaceFake(fake, origin_, "requester.so");
    Result<ElfInfo> elf = ReadElf(path);
    EXPECT_TRUE(elf.ok()) << elf.status().ToString();
    return elf.ok() ? *elf : ElfInfo{};
  }

  Resolution Resolve(const ElfInfo& requester) { return ResolveLibrary(kLeaf, requester, origin_, env_); }
  std::string In(const std::string& dir) const { return tmp_.path() + "/" + dir + "/" + kLeaf; }
  void Remove(const std::string& dir) const { fs::remove(In(dir)); }

  TempDir tmp_;
  std::string origin_;
  SearchEnvironment env_;
};

TEST_F(ResolverOrder, RpathBeatsLdLibraryPathThenCacheThenDefault) {
  const ElfInfo requester = Requester(VIGIL_FAKE_RPATH);
  Resolution r = Resolve(requester);
  ASSERT_TRUE(r.path);
  EXPECT_EQ(*r.path, In("origin/rp"));
  EXPECT_EQ(r.found_via, "RPATH");
  // The others are reported as real paths.
  for (const char* dir : {"llp", "cache", "default"}) {
    EXPECT_NE(std::find(r.other_copies.begin(), r.other_copies.end(), In(dir)), r.other_copies.end()) << dir;
  }
  Remove("origin/rp");
  r = Resolve(requester);
  EXPECT_EQ(r.found_via, "LD_LIBRARY_PATH");
  EXPECT_EQ(*r.path, In("llp"));
  Remove("llp");
  r = Resolve(requester);
  EXPECT_EQ(r.found_via, "ld.so.cache");  // the i386 cache entry before it is ignored
  EXPECT_EQ(*r.path, In("cache"));
  Remove("cache");
  r = Resolve(requester);
  EXPECT_EQ(r.found_via, "default dirs");
  EXPECT_EQ(*r.path, In("default"));
}

TEST_F(ResolverOrder, LdLibraryPathBeatsRunpath) {
  const ElfInfo requester = Requester(VIGIL_FAKE_RUNPATH);
  Resolution r = Resolve(requester);
  EXPECT_EQ(r.found_via, "LD_LIBRARY_PATH");
  Remove("llp");
  r = Resolve(requester);
  EXPECT_EQ(r.found_via, "RUNPATH");
  EXPECT_EQ(*r.path, In("origin/rp"));
}

TEST_F(ResolverOrder, RpathIgnoredWhenRunpathPresent) {
  ElfInfo requester = Requester(VIGIL_FAKE_RUNPATH);
  requester.rpath = {"$ORIGIN/rp"};
  requester.runpath = {"/nonexistent-vigil-dir"};
  Resolution r = Resolve(requester);
  EXPECT_EQ(r.found_via, "LD_LIBRARY_PATH");
}

TEST_F(ResolverOrder, InheritedRpathAfterOwnRpath) {
  ElfInfo requester = Requester(VIGIL_FAKE_LEAF);  // no RPATH of its own
  Remove("origin/rp");
  const std::string inherited = tmp_.Sub("inherited");
  PlaceFake(VIGIL_FAKE_LEAF, inherited, kLeaf);
  Resolution r = ResolveLibrary(kLeaf, requester, origin_, env_, {inherited});
  EXPECT_EQ(r.found_via, "RPATH of a loading object");
  EXPECT_EQ(*r.path, inherited + "/" + kLeaf);
  requester.runpath = {"/nonexistent-vigil-dir"};  // RUNPATH switches RPATH lookups off
  r = ResolveLibrary(kLeaf, requester, origin_, env_, {inherited});
  EXPECT_EQ(r.found_via, "LD_LIBRARY_PATH");
}

TEST_F(ResolverOrder, WrongClassCopyIsSkipped) {
  const ElfInfo requester = Requester(VIGIL_FAKE_RUNPATH);
  const std::string first = tmp_.Sub("llp32") + "/" + kLeaf;
  testing::WriteBytes(first, testing::Elf32Header());
  env_.ld_library_path.insert(env_.ld_library_path.begin(), tmp_.path() + "/llp32");
  Resolution r = Resolve(requester);
  ASSERT_TRUE(r.path);
  EXPECT_EQ(*r.path, In("llp"));
  EXPECT_EQ(r.skipped_wrong_class, std::vector<std::string>{first});
  EXPECT_NE(r.found_via.find("LD_LIBRARY_PATH"), std::string::npos);
  EXPECT_NE(r.found_via.find("skipping"), std::string::npos) << r.found_via;
  EXPECT_NE(std::find(r.other_copies.begin(), r.other_copies.end(), first), r.other_copies.end());
}

TEST_F(ResolverOrder, NonElfStopsTheLoader) {
  const ElfInfo requester = Requester(VIGIL_FAKE_RUNPATH);
  const std::string script = tmp_.Sub("scripts") + "/" + kLeaf;
  testing::WriteText(script, "/* GNU ld script */\nINPUT(libvleaf.so.1.0)\n");
  env_.ld_library_path.insert(env_.ld_library_path.begin(), tmp_.path() + "/scripts");
  Resolution r = Resolve(requester);
  ASSERT_TRUE(r.path);
  EXPECT_EQ(*r.path, script);
  EXPECT_NE(r.load_error.find("not an ELF file"), std::string::npos) << r.load_error;
}

TEST_F(ResolverOrder, MissingListsWhereItLooked) {
  const ElfInfo requester = Requester(VIGIL_FAKE_RPATH);
  Resolution r = ResolveLibrary("libnothere.so.3", requester, origin_, env_);
  EXPECT_FALSE(r.path);
  EXPECT_TRUE(r.found_via.empty());
  EXPECT_TRUE(r.other_copies.empty());
  ASSERT_GE(r.searched.size(), 4u);
  EXPECT_EQ(r.searched[0], "RPATH: " + origin_ + "/rp");
  EXPECT_EQ(r.searched[1], "LD_LIBRARY_PATH: " + tmp_.path() + "/llp");
}

TEST_F(ResolverOrder, NameWithSlashIsAPath) {
  const ElfInfo requester = Requester(VIGIL_FAKE_LEAF);
  Resolution r = ResolveLibrary("$ORIGIN/rp/libvleaf.so.1", requester, origin_, env_);
  ASSERT_TRUE(r.path);
  EXPECT_EQ(*r.path, In("origin/rp"));
  EXPECT_EQ(r.found_via, "path in DT_NEEDED");
}

TEST(Resolver, ExpandOrigin) {
  EXPECT_EQ(ExpandOrigin("$ORIGIN/../lib", "/opt/x"), "/opt/x/../lib");
  EXPECT_EQ(ExpandOrigin("${ORIGIN}/lib:$ORIGIN", "/o"), "/o/lib:/o");
  EXPECT_EQ(ExpandOrigin("$ORIGINAL/lib", "/o"), "$ORIGINAL/lib");
  EXPECT_EQ(ExpandOrigin("/usr/$LIB", "/o"), "/usr/$LIB");
}

TEST(Resolver, FindAllCopiesDeduplicatesRealPaths) {
  TempDir tmp;
  const std::string a = tmp.Sub("a");
  PlaceFake(VIGIL_FAKE_LEAF, a, "libvleaf.so.1.2.3");
  fs::create_symlink("libvleaf.so.1.2.3", a + "/libvleaf.so.1");
  fs::create_directory_symlink(a, tmp.path() + "/a-link");
  PlaceFake(VIGIL_FAKE_LEAF, tmp.Sub("b"), "libvleaf.so.1");
  SearchEnvironment env;
  env.ld_so_cache.clear();
  env.default_dirs = {a};
  env.ld_library_path = {tmp.path() + "/a-link"};
  env.extra_dirs = {tmp.path() + "/b", tmp.path() + "/missing"};
  EXPECT_EQ(FindAllCopies(kLeaf, env),
            (std::vector<std::string>{a + "/libvleaf.so.1.2.3", tmp.path() + "/b/libvleaf.so.1"}));
  EXPECT_EQ(FindAllCopies("libvleaf", env, /*prefix_match=*/true),
            (std::vector<std::string>{a + "/libvleaf.so.1.2.3", tmp.path() + "/b/libvleaf.so.1"}));
  EXPECT_TRUE(FindAllCopies("libother", env, true).empty());
}

TEST(Resolver, FromProcessReadsLdLibraryPathAndWheelFolders) {
  TempDir tmp;
  const std::string wheel = tmp.Sub("venv/lib/python3.11/site-packages/nvidia/cudnn/lib");
  ScopedEnv llp("LD_LIBRARY_PATH", "/a::/b;/c");
  ScopedEnv venv("VIRTUAL_ENV", tmp.path() + "/venv");
  SearchEnvironment env = SearchEnvironment::FromProcess();
  EXPECT_EQ(env.ld_library_path, (std::vector<std::string>{"/a", ".", "/b", "/c"}));
  EXPECT_NE(std::find(env.extra_dirs.begin(), env.extra_dirs.end(), wheel), env.extra_dirs.end());
  EXPECT_LE(env.extra_dirs.size(), 256u);
  for (const std::string& d : env.extra_dirs) EXPECT_TRUE(fs::is_directory(d)) << d;
}

TEST(Resolver, FromProcessWithoutLdLibraryPath) {
  ScopedEnv llp("LD_LIBRARY_PATH", "");
  EXPECT_TRUE(SearchEnvironment::FromProcess().ld_library_path.empty());
}

}  // namespace
}  // namespace vigil::doctor
