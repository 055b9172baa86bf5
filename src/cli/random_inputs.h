// Made-up input values for commands that run a model without input files
// (compare, reduce): deterministic, so two runs see the same values.
#pragma once

#include "cli/tooling.h"

namespace vigil::cli {

// Seeded random values for every required input whose shape is fully
// static: floats uniform in [-1,1], integers in [0,10), bools 0/1. An input
// with a dim that is not fixed, or of a dtype without a generator, is an
// error that says to give it with --input.
Result<InputFiles> GenerateRandomInputs(const runtime::ModelInputs& inputs);

// The same for one value of type `type` (named `name` in messages), with
// its own seed.
Result<runtime::Tensor> RandomTensor(const std::string& name, const ir::TypeInfo& type, uint32_t seed);

}  // namespace vigil::cli
