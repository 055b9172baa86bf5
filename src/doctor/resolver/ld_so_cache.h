// Reader for /etc/ld.so.cache, the index ldconfig writes and the dynamic
// loader consults after LD_LIBRARY_PATH and RUNPATH. ReadLdSoCache (declared
// in library_resolver.h) is the simple view; this header gives every entry
// with its flags so callers can pick the architecture themselves.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace vigil::doctor {

// Flag values ldconfig stores per entry (glibc's ldconfig.h). The low byte is
// the library type, the high byte the architecture; the loader accepts an
// entry when flags == kLdCacheFlagElf or flags == its own default id.
inline constexpr int32_t kLdCacheFlagElf = 0x0001;
inline constexpr int32_t kLdCacheFlagElfLibc6 = 0x0003;
inline constexpr int32_t kLdCacheFlagX8664Lib64 = 0x0300;
inline constexpr int32_t kLdCacheFlagAarch64Lib64 = 0x0a00;

struct LdSoCacheEntry {
  std::string soname;  // the key, e.g. "libc.so.6"
  std::string path;    // the value, e.g. "/lib/x86_64-linux-gnu/libc.so.6"
  int32_t flags = 0;   // 0x0303 for x86-64 glibc libraries
  uint64_t hwcap = 0;  // non-zero for glibc-hwcaps subfolder entries (new format only)
};

// Every entry in cache order. When a file holds both formats, the new one is
// returned: it is what glibc 2.2 and later read.
Result<std::vector<LdSoCacheEntry>> ParseLdSoCache(std::span<const uint8_t> bytes, const std::string& display_path);
Result<std::vector<LdSoCacheEntry>> ReadLdSoCacheEntries(const std::string& path);

// The flags value the loader of an object with this ELF machine and class
// accepts (its _DL_CACHE_DEFAULT_ID); 0 if unknown, which matches nothing
// but kLdCacheFlagElf.
int32_t LdCacheFlagsForMachine(uint16_t machine, bool is_64bit);
// True if the loader for (machine, class) would take this entry.
bool LdCacheEntryMatches(int32_t flags, uint16_t machine, bool is_64bit);

}  // namespace vigil::doctor
