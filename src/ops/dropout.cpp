// Dropout: in inference it is the identity, with an all-true mask. Training
// mode with a non-zero ratio is random and refused by the kernel.
#include "ops/attributes.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"
#include "ops/families.h"

namespace vigil::ops {
namespace {

Status InferDropout(InferenceContext& ctx) {
  const ir::TypeInfo* x = ctx.input_type(0);
  if (!x) return Status::Ok();
  ctx.set_output(0, *x);
  if (ctx.num_outputs() > 1) {
    ir::TypeInfo mask = *x;
    mask.elem_type = ir::DataType::kBool;
    ctx.set_output(1, mask);
  }
  return Status::Ok();
}

// Opsets 7-11: ratio is an attribute; 12+: ratio and training_mode are inputs.
const OpSchema kDropoutSchemas[] = {
    {"", "Dropout", 7, 11, 1, 1, 1, 2, InferDropout},
    {"", "Dropout", 12, kLatest, 1, 3, 1, 2, InferDropout},
};

}  // namespace

std::span<const OpSchema> DropoutSchemas() { return kDropoutSchemas; }

}  // namespace vigil::ops
