// libFuzzer target for the doctor's ELF reader (doctor/resolver/elf_file.h):
// the full parse, the identity check the resolver runs on every candidate,
// and the file-offset-to-address mapping over the segments it found.
#include <cstddef>
#include <cstdint>
#include <span>

#include "doctor/resolver/elf_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  auto id = vigil::doctor::ParseElfIdentity(bytes, "fuzz.so");
  auto elf = vigil::doctor::ParseElf(bytes, "fuzz.so");
  // A file the full parse accepts has an identity, and the same one.
  if (elf.ok() && (!id.ok() || id->is_64bit != elf->is_64bit || id->machine != elf->machine)) __builtin_trap();
  if (elf.ok()) {
    volatile uint64_t a = vigil::doctor::FileOffsetToVaddr(*elf, size / 2);
    (void)a;
  }
  return 0;
}
