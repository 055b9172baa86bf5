// The sequence and optional ops (SequenceConstruct, SequenceAt,
// SplitToSequence, Optional, OptionalGetElement, ...) on the host values
// that carry sequences and optionals (Tensor::Kind). The session's
// control-flow backend runs them, and passes such values to and from bodies.
#pragma once

#include <span>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"
#include "runtime/backend.h"
#include "runtime/tensor.h"

namespace vigil::runtime {

// Whether the node is a sequence/optional op, or reads or makes a sequence
// or an optional (Identity on one, say): it then runs on the host, in the
// control-flow backend.
bool TakesNonDenseValues(const ir::Node& node, const NodeTypes& types);

// Runs one such node (not SequenceMap, which has a body).
Status RunSequenceOp(const ir::Node& node, int64_t opset, std::span<const Tensor* const> inputs,
                     std::vector<Tensor>& outputs);

}  // namespace vigil::runtime
