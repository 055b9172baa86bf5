// libFuzzer target for the TensorProto (.pb) tensor file reader
// (runtime/tensor_file.h): any byte string gives a Status or a tensor.
#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/tensor_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = vigil::runtime::ParseTensorProtoBytes(std::span<const uint8_t>(data, size), "fuzz.pb", nullptr);
  if (file.ok()) {
    // Touch every byte, so that ASan sees a tensor that reaches past its storage.
    const vigil::runtime::Tensor& t = file->tensor;
    volatile uint8_t sum = 0;
    const auto* p = static_cast<const uint8_t*>(t.raw_data());
    for (size_t i = 0; i < t.byte_size(); ++i) sum = static_cast<uint8_t>(sum + p[i]);
  }
  return 0;
}
