// libFuzzer target for what the parent of an isolated run decodes from its
// child (isolation/isolation_wire.h): the answer ('T' + tensors, or 'S' + a
// Diagnosis as JSON) and the tensors alone. A decoded tensor list encodes
// back to the bytes it was read from.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "isolation/isolation_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  auto answer = vigil::doctor::DecodeAnswer(bytes);
  (void)answer;
  auto tensors = vigil::doctor::DecodeTensors(bytes);
  if (tensors.ok()) {
    auto again = vigil::doctor::EncodeTensors(*tensors);
    if (!again.ok() || again->size() > size || std::memcmp(again->data(), data, again->size()) != 0) {
      __builtin_trap();
    }
  }
  return 0;
}
