// Truncated, corrupted and random ELF input: every outcome is a value or a
// Status, never a crash (run under -DVIGIL_SANITIZE=ON to check memory safety).
#include <gtest/gtest.h>

#include <random>

#include "doctor/resolver/elf_file.h"
#include "test_util.h"

namespace vigil::doctor {
namespace {

std::vector<uint8_t> Fake(const char* name) { return testing::ReadBytes(testing::FakePath(name)); }

// Parses a heap copy of exactly `size` bytes, so ASan sees any overread.
void ParsePrefix(const std::vector<uint8_t>& bytes, size_t size) {
  std::vector<uint8_t> copy(bytes.begin(), bytes.begin() + static_cast<long>(size));
  Result<ElfInfo> elf = ParseElf(copy, "prefix");
  if (!elf.ok()) {
    EXPECT_FALSE(elf.status().summary().empty());
  }
}

TEST(ElfCorrupt, EveryTruncationGivesStatusOrValue) {
  const std::vector<uint8_t> bytes = Fake(VIGIL_FAKE_RUNPATH);
  ASSERT_GT(bytes.size(), 1000u);
  for (size_t size = 0; size < bytes.size(); ++size) ParsePrefix(bytes, size);
}

TEST(ElfCorrupt, TruncatedHeaderIsNamed) {
  const std::vector<uint8_t> bytes = Fake(VIGIL_FAKE_LEAF);
  std::vector<uint8_t> head(bytes.begin(), bytes.begin() + 40);
  Result<ElfInfo> elf = ParseElf(head, "short.so");
  ASSERT_FALSE(elf.ok());
  EXPECT_NE(elf.status().summary().find("truncated"), std::string::npos) << elf.status().summary();
}

TEST(ElfCorrupt, TruncatedDynamicStringTableIsNamed) {
  // Cutting the file just after the headers leaves the dynamic table unreadable.
  const std::vector<uint8_t> bytes = Fake(VIGIL_FAKE_RUNPATH);
  std::vector<uint8_t> head(bytes.begin(), bytes.begin() + 1024);
  Result<ElfInfo> elf = ParseElf(head, "cut.so");
  ASSERT_FALSE(elf.ok());
  EXPECT_NE(elf.status().summary().find("cut.so"), std::string::npos);
}

TEST(ElfCorrupt, OverwrittenBytesAtEveryHeaderOffset) {
  const std::vector<uint8_t> bytes = Fake(VIGIL_FAKE_APP);
  const size_t limit = std::min<size_t>(bytes.size(), 4096);
  for (size_t at = 0; at < limit; ++at) {
    for (uint8_t value : {uint8_t{0x00}, uint8_t{0xff}, uint8_t{0x7f}, uint8_t{0x80}}) {
      std::vector<uint8_t> copy = bytes;
      copy[at] = value;
      Result<ElfInfo> elf = ParseElf(copy, "corrupt");
      (void)elf.ok();
    }
  }
  // Section headers sit at the end of the file: corrupt them too.
  for (size_t at = bytes.size() > 2048 ? bytes.size() - 2048 : 0; at < bytes.size(); ++at) {
    std::vector<uint8_t> copy = bytes;
    copy[at] ^= 0xff;
    Result<ElfInfo> elf = ParseElf(copy, "corrupt-tail");
    (void)elf.ok();
  }
}

TEST(ElfCorrupt, RandomMutations) {
  const std::vector<uint8_t> bytes = Fake(VIGIL_FAKE_RUNPATH);
  std::mt19937 rng(12345);  // fixed seed: reproducible failures
  std::uniform_int_distribution<size_t> pos(0, bytes.size() - 1);
  std::uniform_int_distribution<int> val(0, 255), count(1, 16);
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> copy = bytes;
    for (int n = count(rng); n > 0; --n) copy[pos(rng)] = static_cast<uint8_t>(val(rng));
    Result<ElfInfo> elf = ParseElf(copy, "mutant");
    (void)elf.ok();
  }
}

TEST(ElfCorrupt, HostileCounts) {
  std::vector<uint8_t> bytes = Fake(VIGIL_FAKE_LEAF);
  std::vector<uint8_t> copy = bytes;
  testing::Put16(copy, 56, 0xffff);  // e_phnum = PN_XNUM, real count from section 0
  (void)ParseElf(copy, "xnum").ok();
  copy = bytes;
  testing::Put16(copy, 60, 0);       // e_shnum = 0: count from section 0's sh_size
  (void)ParseElf(copy, "shnum0").ok();
  copy = bytes;
  for (int i = 0; i < 8; ++i) copy[32 + i] = 0xff;  // e_phoff huge
  Result<ElfInfo> elf = ParseElf(copy, "phoff");
  ASSERT_FALSE(elf.ok());
  EXPECT_NE(elf.status().summary().find("program header"), std::string::npos) << elf.status().summary();
}

}  // namespace
}  // namespace vigil::doctor
