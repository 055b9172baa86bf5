// JSON and text descriptions of a model's interface, shared by commands.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "ir/graph.h"

namespace vigil::api {

// {"name":..,"dtype":"float32","shape":[1,3,"H",null]} for tensors; for other
// types dtype/shape describe the innermost tensor and "type" names the wrapper.
nlohmann::json ValueInfoToJson(const ir::ValueInfo& vi);

// The interface part of `inspect --json`: ir_version, producer, opsets,
// inputs (in file order; inputs that an initializer also defines, as older
// exporters wrote, are marked "has_initializer": they are optional), outputs.
nlohmann::json ModelInterfaceJson(const ir::Model& model);

}  // namespace vigil::api
