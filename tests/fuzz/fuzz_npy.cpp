// libFuzzer target for the .npy reader (runtime/tensor_file.h): any byte
// string gives a Status or a tensor whose bytes lie inside the input.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "runtime/tensor_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = vigil::runtime::ParseNpyBytes(std::span<const uint8_t>(data, size), "fuzz.npy", nullptr);
  if (file.ok()) {
    // The data the header describes is exactly what follows it.
    const vigil::runtime::Tensor& t = file->tensor;
    if (t.byte_size() > size) __builtin_trap();
    // Touch every byte, so that ASan sees a tensor that reaches past the input.
    volatile uint8_t sum = 0;
    const auto* p = static_cast<const uint8_t*>(t.raw_data());
    for (size_t i = 0; i < t.byte_size(); ++i) sum = static_cast<uint8_t>(sum + p[i]);
  }
  return 0;
}
