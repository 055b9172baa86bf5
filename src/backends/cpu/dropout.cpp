// Dropout in inference: Y = X (a view), mask all true. With training_mode
// true and a non-zero ratio the output is random, which vigil does not do.
#include <cstring>

#include "backends/cpu/kernel.h"
#include "vigil/float16.h"
#include "backends/cpu/kernel_families.h"

namespace vigil::cpu {
namespace {

Result<double> RatioInput(KernelContext& ctx) {
  const runtime::Tensor* r = ctx.input(1);
  if (!r) return 0.5;
  if (r->element_count() != 1) return ctx.Fail("ratio must be a scalar, got {}", r->Describe());
  switch (r->dtype()) {
    case ir::DataType::kFloat32: return r->data<float>()[0];
    case ir::DataType::kFloat64: return r->data<double>()[0];
    case ir::DataType::kFloat16: return Float16ToFloat(r->data<uint16_t>()[0]);
    case ir::DataType::kBfloat16: return Bfloat16ToFloat(r->data<uint16_t>()[0]);
    default: return ctx.UnsupportedDtype(1);
  }
}

Status Dropout(KernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  bool training = false;
  if (ctx.opset() >= 12) {
    if (const runtime::Tensor* t = ctx.input(2)) {
      if (t->dtype() != ir::DataType::kBool || t->element_count() != 1) {
        return ctx.Fail("training_mode must be a bool scalar, got {}", t->Describe());
      }
      training = t->data<uint8_t>()[0] != 0;
    }
    VIGIL_ASSIGN_OR_RETURN(double ratio, RatioInput(ctx));
    if (training && ratio != 0.0) {
      return ctx.Unsupported("training_mode=true with ratio {} drops random elements; vigil runs inference only",
                             ratio);
    }
  }
  VIGIL_RETURN_IF_ERROR(ctx.SetOutput(0, *x));
  if (ctx.output_wanted(1)) {
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * mask, ctx.Output(1, ir::DataType::kBool, x->shape()));
    std::memset(mask->raw_data(), 1, mask->byte_size());
  }
  return Status::Ok();
}

const KernelDef kDropoutKernels[] = {
    {"", "Dropout", 7, kLatest, Dropout},
};

}  // namespace

std::span<const KernelDef> DropoutKernels() { return kDropoutKernels; }

}  // namespace vigil::cpu
