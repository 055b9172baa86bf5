// ld.so.cache layout (from glibc's sysdeps/generic/dl-cache.h, facts only):
//
//   old format  "ld.so-1.7.0" (11 bytes), pad to 12, uint32 nlibs,
//               nlibs x {int32 flags, uint32 key, uint32 value}   (12 bytes each);
//               string offsets count from the end of that entry array.
//   new format  "glibc-ld.so.cache" "1.1" (20 bytes), uint32 nlibs,
//               uint32 len_strings, uint8 flags (2 = little-endian),
//               3 pad, uint32 extension_offset, 3 x uint32 unused   (48 bytes),
//               nlibs x {int32 flags, uint32 key, uint32 value,
//                        uint32 osversion, uint64 hwcap}        (24 bytes each);
//               string offsets count from the start of the new header.
//   A file may hold the old format followed by the new one, whose header
//   then starts at the end of the old entries rounded up to 8 bytes.
#include "doctor/resolver/ld_so_cache.h"

#include <cstring>
#include <string_view>

#include "base/mapped_file.h"
#include "doctor/resolver/library_resolver.h"

namespace vigil::doctor {
namespace {

constexpr std::string_view kOldMagic = "ld.so-1.7.0";
constexpr std::string_view kNewMagic = "glibc-ld.so.cache1.1";
constexpr uint64_t kOldHeader = 16;
constexpr uint64_t kOldEntry = 12;
constexpr uint64_t kNewHeader = 48;
constexpr uint64_t kNewEntry = 24;
constexpr uint8_t kEndianUnset = 0;
constexpr uint8_t kEndianLittle = 2;
constexpr uint16_t kEm386 = 3;
constexpr uint16_t kEmX8664 = 62;
constexpr uint16_t kEmAarch64 = 183;
constexpr int32_t kFlagX8664LibX32 = 0x0800;

uint32_t U32(std::span<const uint8_t> b, uint64_t at) {
  return static_cast<uint32_t>(b[at]) | (static_cast<uint32_t>(b[at + 1]) << 8) |
         (static_cast<uint32_t>(b[at + 2]) << 16) | (static_cast<uint32_t>(b[at + 3]) << 24);
}
uint64_t U64(std::span<const uint8_t> b, uint64_t at) {
  return static_cast<uint64_t>(U32(b, at)) | (static_cast<uint64_t>(U32(b, at + 4)) << 32);
}

bool StartsWith(std::span<const uint8_t> b, uint64_t at, std::string_view magic) {
  return at <= b.size() && magic.size() <= b.size() - at && std::memcmp(b.data() + at, magic.data(), magic.size()) == 0;
}

Status Damaged(const std::string& path, std::string_view what) {
  return EnvironmentError("'{}' is a damaged ld.so.cache: {}", path, what)
      .WithFact("path", path)
      .WithFix("run `sudo ldconfig` to rebuild it");
}

// A NUL-terminated string at base+offset, inside the file.
Result<std::string> CacheString(std::span<const uint8_t> b, const std::string& path, uint64_t base,
                                uint64_t offset) {
  if (base > b.size() || offset >= b.size() - base) return Damaged(path, "a string offset points past the end");
  const uint8_t* start = b.data() + base + offset;
  const void* nul = std::memchr(start, 0, b.size() - base - offset);
  if (nul == nullptr) return Damaged(path, "a string is not terminated");
  return std::string(reinterpret_cast<const char*>(start), static_cast<const uint8_t*>(nul) - start);
}

Status ReadEntries(std::span<const uint8_t> b, const std::string& path, uint64_t first, uint64_t count,
                   uint64_t entry_size, uint64_t string_base, std::vector<LdSoCacheEntry>& out) {
  // count * entry_size cannot overflow: count fits 32 bits, entry_size is 24 at most.
  if (first > b.size() || count * entry_size > b.size() - first) return Damaged(path, "the entry table is truncated");
  out.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t at = first + i * entry_size;
    LdSoCacheEntry e;
    e.flags = static_cast<int32_t>(U32(b, at));
    VIGIL_ASSIGN_OR_RETURN(e.soname, CacheString(b, path, string_base, U32(b, at + 4)));
    VIGIL_ASSIGN_OR_RETURN(e.path, CacheString(b, path, string_base, U32(b, at + 8)));
    if (entry_size == kNewEntry) e.hwcap = U64(b, at + 16);
    out.push_back(std::move(e));
  }
  return Status::Ok();
}

Result<std::vector<LdSoCacheEntry>> ParseNew(std::span<const uint8_t> b, const std::string& path, uint64_t at) {
  if (at > b.size() || b.size() - at < kNewHeader) return Damaged(path, "the header is truncated");
  const uint8_t endian = b[at + 28];
  if (endian != kEndianUnset && endian != kEndianLittle) {
    return UnsupportedError("'{}' is a big-endian ld.so.cache, which vigil does not read", path).WithFact("path", path);
  }
  std::vector<LdSoCacheEntry> out;
  VIGIL_RETURN_IF_ERROR(ReadEntries(b, path, at + kNewHeader, U32(b, at + 20), kNewEntry, at, out));
  return out;
}

Result<std::vector<LdSoCacheEntry>> ParseOld(std::span<const uint8_t> b, const std::string& path) {
  if (b.size() < kOldHeader) return Damaged(path, "the header is truncated");
  const uint64_t nlibs = U32(b, 12);
  const uint64_t strings = kOldHeader + nlibs * kOldEntry;
  if (strings > b.size()) return Damaged(path, "the entry table is truncated");
  // The new format, when present, follows the old entries at 8-byte alignment.
  const uint64_t next = (strings + 7) / 8 * 8;
  if (StartsWith(b, next, kNewMagic)) return ParseNew(b, path, next);
  std::vector<LdSoCacheEntry> out;
  VIGIL_RETURN_IF_ERROR(ReadEntries(b, path, kOldHeader, nlibs, kOldEntry, strings, out));
  return out;
}

}  // namespace

Result<std::vector<LdSoCacheEntry>> ParseLdSoCache(std::span<const uint8_t> bytes, const std::string& path) {
  if (StartsWith(bytes, 0, kNewMagic)) return ParseNew(bytes, path, 0);
  if (StartsWith(bytes, 0, kOldMagic)) return ParseOld(bytes, path);
  return EnvironmentError("'{}' is not an ld.so.cache file (unknown magic)", path)
      .WithFact("path", path)
      .WithFix("run `sudo ldconfig` to rebuild it");
}

Result<std::vector<LdSoCacheEntry>> ReadLdSoCacheEntries(const std::string& path) {
  VIGIL_ASSIGN_OR_RETURN(auto file, MappedFile::Open(path));
  return ParseLdSoCache(file->bytes(), path);
}

int32_t LdCacheFlagsForMachine(uint16_t machine, bool is_64bit) {
  // glibc's _DL_CACHE_DEFAULT_ID per port.
  if (machine == kEmX8664) {
    return is_64bit ? (kLdCacheFlagElfLibc6 | kLdCacheFlagX8664Lib64) : (kLdCacheFlagElfLibc6 | kFlagX8664LibX32);
  }
  if (machine == kEmAarch64 && is_64bit) return kLdCacheFlagElfLibc6 | kLdCacheFlagAarch64Lib64;
  if (machine == kEm386 && !is_64bit) return kLdCacheFlagElfLibc6;
  return 0;
}

bool LdCacheEntryMatches(int32_t flags, uint16_t machine, bool is_64bit) {
  const int32_t id = LdCacheFlagsForMachine(machine, is_64bit);
  return flags == kLdCacheFlagElf || (id != 0 && flags == id);
}

// The simple view declared in library_resolver.h: only entries this process's
// loader would take (we are the same architecture as the binaries we check),
// in cache order; std::multimap keeps insertion order among equal keys.
Result<std::multimap<std::string, std::string>> ReadLdSoCache(const std::string& path) {
  VIGIL_ASSIGN_OR_RETURN(std::vector<LdSoCacheEntry> entries, ReadLdSoCacheEntries(path));
#if defined(__x86_64__)
  constexpr uint16_t kHost = kEmX8664;
#elif defined(__aarch64__)
  constexpr uint16_t kHost = kEmAarch64;
#else
  constexpr uint16_t kHost = 0;
#endif
  std::multimap<std::string, std::string> out;
  for (LdSoCacheEntry& e : entries) {
    if (LdCacheEntryMatches(e.flags, kHost, sizeof(void*) == 8)) out.emplace(std::move(e.soname), std::move(e.path));
  }
  return out;
}

}  // namespace vigil::doctor
