// What the op catalogue knows of If, Loop and Scan beyond their schemas
// (control_flow.cpp).
#pragma once

#include <cstddef>

#include "ir/graph.h"

namespace vigil::ops {

// If, Loop, Scan or SequenceMap in the default domain: the ops with bodies.
bool IsControlFlowOp(const ir::Node& node);

// The node's inputs as written in the model: sessions append the implicit
// inputs of control-flow nodes (the values their bodies read from enclosing
// graphs) after them.
size_t ExplicitInputCount(const ir::Node& node);

}  // namespace vigil::ops
