// libFuzzer target for the ONNX model reader: any byte string must give a
// Status or a model, and a model must survive graph validation, with no
// crash, leak, hang or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <span>

#include "ir/validate.h"
#include "onnx/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Empty base_dir: external data is refused, so the fuzzer never touches files.
  auto model = vigil::onnx::ReadModelFromBytes(std::span<const uint8_t>(data, size), "fuzz.onnx", "");
  if (model.ok()) {
    vigil::Status status = vigil::ir::ValidateModel(*model);
    (void)status;
  }
  return 0;
}
