// libFuzzer target for the ld.so.cache reader (doctor/resolver/ld_so_cache.h).
#include <cstddef>
#include <cstdint>
#include <span>

#include "doctor/resolver/ld_so_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto entries = vigil::doctor::ParseLdSoCache(std::span<const uint8_t>(data, size), "fuzz.cache");
  if (entries.ok()) {
    for (const vigil::doctor::LdSoCacheEntry& e : *entries) {
      // Every string was read from inside the input.
      if (e.soname.size() >= size || e.path.size() >= size) __builtin_trap();
      volatile bool m = vigil::doctor::LdCacheEntryMatches(e.flags, 62, true);
      (void)m;
    }
  }
  return 0;
}
