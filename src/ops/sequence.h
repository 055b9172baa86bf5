// What the op catalogue knows of the sequence and optional ops beyond their
// schemas (sequence.cpp).
#pragma once

#include "ir/graph.h"
#include "ir/types.h"

namespace vigil::ops {

// The sequence and optional ops without a body, in the default domain
// (SequenceMap, which has one, is a control-flow op: control_flow.h).
bool IsSequenceOp(const ir::Node& node);

// The type "sequence of `element`".
ir::TypeInfo SequenceOf(ir::TypeInfo element);

}  // namespace vigil::ops
