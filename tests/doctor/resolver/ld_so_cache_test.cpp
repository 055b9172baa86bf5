// ld.so.cache parsing: the machine's real cache, caches written by our own
// encoder in the new, old and combined formats, and damaged caches.
#include "doctor/resolver/ld_so_cache.h"

#include <gtest/gtest.h>

#include <random>

#include "doctor/resolver/library_resolver.h"
#include "test_util.h"

namespace vigil::doctor {
namespace {

using testing::CacheEntry;
using testing::EncodeLdSoCache;

const std::vector<CacheEntry> kEntries = {
    {"libfoo.so.1", "/opt/a/libfoo.so.1", 0x0303, 0},
    {"libfoo.so.1", "/opt/b/libfoo.so.1", 0x0303, 0},
    {"libfoo.so.1", "/usr/lib32/libfoo.so.1", 0x0003, 0},  // i386 entry
    {"libbar.so.2", "/opt/a/glibc-hwcaps/x86-64-v3/libbar.so.2", 0x0303, (1ull << 62) | 1},
};

TEST(LdSoCache, RealCacheFindsLibc) {
  const std::string path = "/etc/ld.so.cache";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  Result<std::multimap<std::string, std::string>> cache = ReadLdSoCache(path);
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  auto it = cache->find("libc.so.6");
  ASSERT_NE(it, cache->end());
  EXPECT_TRUE(it->second.ends_with("/libc.so.6")) << it->second;
  EXPECT_TRUE(std::filesystem::exists(it->second)) << it->second;
}

TEST(LdSoCache, NewFormatKeepsFlagsOrderAndHwcap) {
  Result<std::vector<LdSoCacheEntry>> e = ParseLdSoCache(EncodeLdSoCache(kEntries, false, true), "new");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_EQ(e->size(), 4u);
  EXPECT_EQ((*e)[0].path, "/opt/a/libfoo.so.1");
  EXPECT_EQ((*e)[1].path, "/opt/b/libfoo.so.1");
  EXPECT_EQ((*e)[2].flags, 0x0003);
  EXPECT_EQ((*e)[3].soname, "libbar.so.2");
  EXPECT_EQ((*e)[3].hwcap, (1ull << 62) | 1);
}

TEST(LdSoCache, OldFormatAlone) {
  Result<std::vector<LdSoCacheEntry>> e = ParseLdSoCache(EncodeLdSoCache(kEntries, true, false), "old");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_EQ(e->size(), 4u);
  EXPECT_EQ((*e)[1].soname, "libfoo.so.1");
  EXPECT_EQ((*e)[1].path, "/opt/b/libfoo.so.1");
  EXPECT_EQ((*e)[3].hwcap, 0u);  // the old format has no hwcap field
}

TEST(LdSoCache, OldFollowedByNewReadsNew) {
  Result<std::vector<LdSoCacheEntry>> e = ParseLdSoCache(EncodeLdSoCache(kEntries, true, true), "both");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_EQ(e->size(), 4u);
  EXPECT_EQ((*e)[3].hwcap, (1ull << 62) | 1);  // only the new format carries it
  EXPECT_EQ((*e)[0].path, "/opt/a/libfoo.so.1");
}

TEST(LdSoCache, SimpleViewFiltersToThisArchitecture) {
  testing::TempDir tmp;
  const std::string path = tmp.path() + "/ld.so.cache";
  testing::WriteBytes(path, EncodeLdSoCache(kEntries, false, true));
  Result<std::multimap<std::string, std::string>> cache = ReadLdSoCache(path);
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
#if defined(__x86_64__)
  auto [first, last] = cache->equal_range("libfoo.so.1");
  std::vector<std::string> paths;
  for (auto it = first; it != last; ++it) paths.push_back(it->second);
  EXPECT_EQ(paths, (std::vector<std::string>{"/opt/a/libfoo.so.1", "/opt/b/libfoo.so.1"}));
#endif
}

TEST(LdSoCache, FlagsPerMachine) {
  EXPECT_EQ(LdCacheFlagsForMachine(62, true), 0x0303);
  EXPECT_EQ(LdCacheFlagsForMachine(183, true), 0x0a03);
  EXPECT_EQ(LdCacheFlagsForMachine(3, false), 0x0003);
  EXPECT_TRUE(LdCacheEntryMatches(0x0303, 62, true));
  EXPECT_TRUE(LdCacheEntryMatches(0x0001, 62, true));  // plain ELF entries match everyone
  EXPECT_FALSE(LdCacheEntryMatches(0x0003, 62, true));
  EXPECT_TRUE(LdCacheEntryMatches(0x0003, 3, false));
  EXPECT_FALSE(LdCacheEntryMatches(0x0303, 3, false));
}

TEST(LdSoCache, BadMagicAndDamage) {
  Result<std::vector<LdSoCacheEntry>> bad = ParseLdSoCache(std::vector<uint8_t>(64, 'x'), "junk");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().summary().find("not an ld.so.cache"), std::string::npos);

  std::vector<uint8_t> bytes = EncodeLdSoCache(kEntries, false, true);
  testing::Put32(bytes, 48 + 4, 0x7fffffff);  // first key offset far outside
  Result<std::vector<LdSoCacheEntry>> damaged = ParseLdSoCache(bytes, "damaged");
  ASSERT_FALSE(damaged.ok());
  EXPECT_NE(damaged.status().summary().find("damaged"), std::string::npos);

  std::vector<uint8_t> many = EncodeLdSoCache(kEntries, false, true);
  testing::Put32(many, 20, 0xffffffff);  // nlibs far beyond the file
  EXPECT_FALSE(ParseLdSoCache(many, "many").ok());

  testing::TempDir tmp;
  EXPECT_FALSE(ReadLdSoCache(tmp.path() + "/missing").ok());
}

TEST(LdSoCache, TruncationsAndMutationsNeverCrash) {
  for (bool old_format : {false, true}) {
    const std::vector<uint8_t> bytes = EncodeLdSoCache(kEntries, old_format, true);
    for (size_t size = 0; size < bytes.size(); ++size) {
      std::vector<uint8_t> copy(bytes.begin(), bytes.begin() + static_cast<long>(size));
      (void)ParseLdSoCache(copy, "cut").ok();
    }
    std::mt19937 rng(7);
    std::uniform_int_distribution<size_t> pos(0, bytes.size() - 1);
    for (int iter = 0; iter < 2000; ++iter) {
      std::vector<uint8_t> copy = bytes;
      for (int n = 0; n < 4; ++n) copy[pos(rng)] = static_cast<uint8_t>(rng());
      (void)ParseLdSoCache(copy, "mutant").ok();
    }
  }
}

}  // namespace
}  // namespace vigil::doctor
