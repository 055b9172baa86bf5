// ReadElf on fake libraries with known SONAME/NEEDED/RPATH/RUNPATH/build-id,
// on real system files (checked against readelf), and on non-ELF input.
#include "doctor/resolver/elf_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>

#include "test_util.h"

namespace vigil::doctor {
namespace {

using testing::FakePath;

// "Build ID: abc..." from `readelf -n`, or "" if readelf is unavailable.
std::string ReadelfBuildId(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(("readelf -n '" + path + "' 2>/dev/null").c_str(), "r"), ::pclose);
  if (!p) return {};
  char line[512];
  while (std::fgets(line, sizeof line, p.get()) != nullptr) {
    std::string s(line);
    const size_t at = s.find("Build ID: ");
    if (at != std::string::npos) return s.substr(at + 10, s.find_last_not_of("\r\n ") - at - 9);
  }
  return {};
}

TEST(ElfFile, LeafSonameAndBuildId) {
  Result<ElfInfo> elf = ReadElf(FakePath(VIGIL_FAKE_LEAF));
  ASSERT_TRUE(elf.ok()) << elf.status().ToString();
  EXPECT_TRUE(elf->is_64bit);
  EXPECT_EQ(elf->machine, 62);
  EXPECT_EQ(elf->soname, "libvleaf.so.1");
  EXPECT_TRUE(elf->needed.empty());
  EXPECT_TRUE(elf->rpath.empty());
  EXPECT_TRUE(elf->runpath.empty());
  // Linked with -Wl,--build-id=0x0123456789abcdef0123456789abcdef01234567.
  EXPECT_EQ(elf->build_id, "0123456789abcdef0123456789abcdef01234567");
}

TEST(ElfFile, BuildIdMatchesReadelf) {
  for (const std::string& path : {FakePath(VIGIL_FAKE_LEAF), FakePath(VIGIL_FAKE_APP),
                                  std::string("/lib/x86_64-linux-gnu/libc.so.6")}) {
    const std::string expected = ReadelfBuildId(path);
    if (expected.empty()) continue;  // no readelf, or no such file on this system
    Result<ElfInfo> elf = ReadElf(path);
    ASSERT_TRUE(elf.ok()) << elf.status().ToString();
    EXPECT_EQ(elf->build_id, expected) << path;
  }
}

TEST(ElfFile, RunpathAndNeeded) {
  Result<ElfInfo> elf = ReadElf(FakePath(VIGIL_FAKE_RUNPATH));
  ASSERT_TRUE(elf.ok()) << elf.status().ToString();
  EXPECT_EQ(elf->soname, "libvrunpath.so.1");
  EXPECT_EQ(elf->needed, std::vector<std::string>{"libvleaf.so.1"});
  EXPECT_EQ(elf->runpath, (std::vector<std::string>{"$ORIGIN/rp", "/nonexistent-vigil-dir"}));
  EXPECT_TRUE(elf->rpath.empty());
}

TEST(ElfFile, RpathOldDtags) {
  Result<ElfInfo> elf = ReadElf(FakePath(VIGIL_FAKE_RPATH));
  ASSERT_TRUE(elf.ok()) << elf.status().ToString();
  EXPECT_EQ(elf->rpath, std::vector<std::string>{"$ORIGIN/rp"});
  EXPECT_TRUE(elf->runpath.empty());
}

TEST(ElfFile, NeededInFileOrder) {
  Result<ElfInfo> elf = ReadElf(FakePath(VIGIL_FAKE_APP));
  ASSERT_TRUE(elf.ok()) << elf.status().ToString();
  EXPECT_EQ(elf->needed, (std::vector<std::string>{"libvrunpath.so.1", "libvleaf.so.1"}));
}

TEST(ElfFile, SectionFallbackWithoutProgramHeaders) {
  // With e_phnum = 0 the dynamic table comes from SHT_DYNAMIC and the strings
  // from .dynstr through its sh_link, the build-id from the note section.
  std::vector<uint8_t> bytes = testing::ReadBytes(FakePath(VIGIL_FAKE_RUNPATH));
  ASSERT_GT(bytes.size(), 64u);
  testing::Put16(bytes, 56, 0);  // e_phnum of ELF64
  Result<ElfInfo> elf = ParseElf(bytes, "no-phdrs");
  ASSERT_TRUE(elf.ok()) << elf.status().ToString();
  EXPECT_EQ(elf->soname, "libvrunpath.so.1");
  EXPECT_EQ(elf->needed, std::vector<std::string>{"libvleaf.so.1"});
  EXPECT_FALSE(elf->build_id.empty());
}

TEST(ElfFile, RealSystemLibrary) {
  const std::string libc = "/lib/x86_64-linux-gnu/libc.so.6";
  if (!std::filesystem::exists(libc)) GTEST_SKIP() << "no " << libc;
  Result<ElfInfo> elf = ReadElf(libc);
  ASSERT_TRUE(elf.ok()) << elf.status().ToString();
  EXPECT_EQ(elf->soname, "libc.so.6");
  EXPECT_FALSE(elf->build_id.empty());
}

TEST(ElfFile, LinkerScriptIsNotElf) {
  testing::TempDir tmp;
  const std::string script = tmp.path() + "/libc.so";
  testing::WriteText(script, "/* GNU ld script */\nGROUP ( /lib/x86_64-linux-gnu/libc.so.6 )\n");
  Result<ElfInfo> elf = ReadElf(script);
  ASSERT_FALSE(elf.ok());
  EXPECT_EQ(elf.status().code(), ErrorCode::kEnvironment);
  EXPECT_NE(elf.status().summary().find("not an ELF file"), std::string::npos) << elf.status().summary();
}

TEST(ElfFile, EmptyAndMissingFiles) {
  testing::TempDir tmp;
  const std::string empty = tmp.path() + "/empty.so";
  testing::WriteText(empty, "");
  Result<ElfInfo> e = ReadElf(empty);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().summary().find("not an ELF file"), std::string::npos);
  Result<ElfInfo> m = ReadElf(tmp.path() + "/missing.so");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kEnvironment);
  Result<ElfInfo> d = ReadElf(tmp.path());  // a folder
  EXPECT_FALSE(d.ok());
}

TEST(ElfFile, BigEndianIsUnsupported) {
  std::vector<uint8_t> bytes = testing::Elf32Header();
  bytes[5] = 2;  // ELFDATA2MSB
  Result<ElfInfo> elf = ParseElf(bytes, "be.so");
  ASSERT_FALSE(elf.ok());
  EXPECT_EQ(elf.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(elf.status().summary().find("big-endian"), std::string::npos);
  // The identity alone is still readable: the resolver skips such files.
  Result<ElfIdentity> id = ParseElfIdentity(bytes, "be.so");
  ASSERT_TRUE(id.ok());
  EXPECT_FALSE(id->little_endian);
}

TEST(ElfFile, CraftedElf32Header) {
  Result<ElfInfo> elf = ParseElf(testing::Elf32Header(), "i386.so");
  ASSERT_TRUE(elf.ok()) << elf.status().ToString();
  EXPECT_FALSE(elf->is_64bit);
  EXPECT_EQ(elf->machine, 3);
  EXPECT_TRUE(elf->needed.empty());
}

TEST(ElfFile, IdentityOfFile) {
  Result<ElfIdentity> id = ReadElfIdentity(FakePath(VIGIL_FAKE_LEAF));
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_TRUE(id->is_64bit);
  EXPECT_TRUE(id->little_endian);
  EXPECT_EQ(id->machine, 62);
}

}  // namespace
}  // namespace vigil::doctor
