#include "conformance_case.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "backends/cpu/cpu_backend.h"
#include "onnx/reader.h"
#include "runtime/session.h"
#include "runtime/tensor_compare.h"
#include "runtime/tensor_file.h"
#include "runtime/value_file.h"

namespace fs = std::filesystem;

namespace vigil::conformance {
namespace {

void CollectOps(const ir::Graph& g, std::set<std::string>& ops) {
  for (const ir::Node& n : g.nodes) {
    ops.insert(n.op_type);
    for (const ir::Attribute& a : n.attributes) {
      if (a.g) CollectOps(*a.g, ops);
      for (const auto& sub : a.graphs) {
        if (sub) CollectOps(*sub, ops);
      }
    }
  }
}

void CollectTypes(const ir::TypeInfo& t, std::set<int32_t>& types) {
  if (t.kind == ir::TypeInfo::Kind::kUnknown) return;
  if (t.elem_type != ir::DataType::kUndefined) types.insert(static_cast<int32_t>(t.elem_type));
  if (t.inner) CollectTypes(*t.inner, types);
}

// Every element type the graph (and its subgraphs) declares or produces:
// inputs, outputs, value infos, initializers, tensor attributes and the
// target type of Cast (attribute 'to').
void CollectDtypes(const ir::Graph& g, std::set<int32_t>& types) {
  for (const auto* list : {&g.inputs, &g.outputs, &g.value_infos}) {
    for (const ir::ValueInfo& vi : *list) CollectTypes(vi.type, types);
  }
  for (const ir::Tensor& t : g.initializers) types.insert(static_cast<int32_t>(t.dtype));
  for (const ir::Node& n : g.nodes) {
    for (const ir::Attribute& a : n.attributes) {
      if (a.type == ir::AttributeType::kTensor) types.insert(static_cast<int32_t>(a.t.dtype));
      if (a.name == "to" && a.type == ir::AttributeType::kInt) types.insert(static_cast<int32_t>(a.i));
      if (a.g) CollectDtypes(*a.g, types);
      for (const auto& sub : a.graphs) {
        if (sub) CollectDtypes(*sub, types);
      }
    }
  }
}

// TensorProto.DataType's names, for out-of-scope-dtype lines.
int32_t DtypeByOnnxName(const std::string& name) {
  static const std::map<std::string, int32_t> kNames = {
      {"STRING", 8},           {"FLOAT8E4M3FN", 17}, {"FLOAT8E4M3FNUZ", 18}, {"FLOAT8E5M2", 19},
      {"FLOAT8E5M2FNUZ", 20},  {"UINT4", 21},        {"INT4", 22},           {"FLOAT4E2M1", 23},
      {"FLOAT8E8M0", 24},      {"UINT2", 25},        {"INT2", 26},           {"COMPLEX64", 14},
      {"COMPLEX128", 15}};
  auto it = kNames.find(name);
  return it == kNames.end() ? -1 : it->second;
}

std::vector<fs::path> DataFiles(const fs::path& set, const std::string& prefix) {
  std::vector<fs::path> files;
  for (int i = 0;; ++i) {
    fs::path p = set / fmt::format("{}_{}.pb", prefix, i);
    if (!fs::exists(p)) break;
    files.push_back(p);
  }
  return files;
}

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

// ONNX 1.12's test data stores bfloat16 tensors with data_type UINT16 (numpy
// has no bfloat16): the bits are bfloat16, so read them as such where the
// model says bfloat16.
runtime::Tensor AsBfloat16(const runtime::Tensor& t) {
  return runtime::Tensor::Shared(ir::DataType::kBfloat16, t.shape(), const_cast<void*>(t.raw_data()), t.storage());
}

ir::DataType DeclaredDtype(const runtime::Session& session, const std::string& name) {
  for (const auto* list : {&session.inputs().required, &session.inputs().optional}) {
    for (const ir::ValueInfo& vi : *list) {
      if (vi.name == name) return vi.type.elem_type;
    }
  }
  return ir::DataType::kUndefined;
}

// Runs one test_data_set_N; empty string on success, else why not.
bool IsWrapper(const ir::ValueInfo* vi) {
  return vi && vi->has_type &&
         (vi->type.kind == ir::TypeInfo::Kind::kSequence || vi->type.kind == ir::TypeInfo::Kind::kOptional);
}

// Sequences item by item, empty optionals by kind; tensors as tensors.
std::string CompareValues(const runtime::Tensor& expected, const runtime::Tensor& got) {
  if (expected.kind() != got.kind()) return fmt::format("expected {}, got {}", expected.Describe(), got.Describe());
  if (expected.kind() == runtime::Tensor::Kind::kEmptyOptional) return {};
  if (expected.kind() == runtime::Tensor::Kind::kDense) {
    runtime::TensorComparison c = runtime::CompareTensors(expected, got, kRtol, kAtol);
    return c.ok() ? std::string() : fmt::format("expected {}, got {}: {}", expected.Describe(), got.Describe(),
                                                c.Describe());
  }
  if (expected.items().size() != got.items().size()) {
    return fmt::format("expected {}, got {}", expected.Describe(), got.Describe());
  }
  for (size_t k = 0; k < expected.items().size(); ++k) {
    std::string why = CompareValues(expected.items()[k], got.items()[k]);
    if (!why.empty()) return fmt::format("item {}: {}", k, why);
  }
  return {};
}

std::string RunDataSet(const runtime::Session& session, const ir::Model& model, const fs::path& set) {
  std::vector<runtime::TensorFile> inputs;
  std::vector<fs::path> input_files = DataFiles(set, "input");
  std::vector<runtime::Tensor> wrapped(input_files.size());  // sequences and optionals, by input index
  for (size_t i = 0; i < input_files.size(); ++i) {
    const fs::path& p = input_files[i];
    const ir::ValueInfo* vi = i < model.graph.inputs.size() ? &model.graph.inputs[i] : nullptr;
    if (IsWrapper(vi)) {
      auto v = runtime::ReadValueProto(p.string(), vi->type);
      if (!v.ok()) return "reading " + p.filename().string() + ": " + v.status().ToString();
      wrapped[i] = std::move(*v);
      inputs.emplace_back();
      continue;
    }
    auto t = runtime::ReadTensorProto(p.string());
    if (!t.ok()) return "reading " + p.filename().string() + ": " + t.status().ToString();
    inputs.push_back(std::move(*t));
  }
  std::vector<runtime::InputBinding> bindings;
  const auto& required = session.inputs().required;
  const auto& optional = session.inputs().optional;
  for (size_t i = 0; i < inputs.size(); ++i) {
    runtime::InputBinding b;
    const runtime::Tensor& t = inputs[i].tensor;
    // The data sets list inputs in the graph's input order; names in the .pb
    // files are often empty or stale.
    if (i < model.graph.inputs.size()) b.name = model.graph.inputs[i].name;
    else b.name = inputs[i].name;
    bool known_name = false;
    for (const auto* list : {&required, &optional}) {
      for (const ir::ValueInfo& vi : *list) known_name |= vi.name == b.name;
    }
    if (!known_name) continue;  // e.g. an initializer listed as input in old models
    if (!wrapped[i].is_dense() || (i < model.graph.inputs.size() && IsWrapper(&model.graph.inputs[i]))) {
      b.source = fmt::format("input_{}.pb", i);
      if (wrapped[i].is_dense()) {  // an optional tensor with a value
        b.dtype = wrapped[i].dtype();
        b.shape = wrapped[i].shape();
        b.data = wrapped[i].raw_data();
        b.byte_size = wrapped[i].byte_size();
      } else {
        b.value = &wrapped[i];
      }
      bindings.push_back(b);
      continue;
    }
    if (t.dtype() == ir::DataType::kUint16 && DeclaredDtype(session, b.name) == ir::DataType::kBfloat16) {
      inputs[i].tensor = AsBfloat16(t);
    }
    b.dtype = t.dtype();
    b.shape = t.shape();
    b.data = t.raw_data();
    b.byte_size = t.byte_size();
    b.source = fmt::format("input_{}.pb", i);
    bindings.push_back(b);
  }
  auto outputs = session.Run(bindings);
  if (!outputs.ok()) return FirstLine(outputs.status().ToString());
  std::vector<fs::path> expected_files = DataFiles(set, "output");
  if (expected_files.size() != outputs->size()) {
    return fmt::format("{} outputs, the test expects {}", outputs->size(), expected_files.size());
  }
  for (size_t i = 0; i < expected_files.size(); ++i) {
    const ir::ValueInfo* vi = i < model.graph.outputs.size() ? &model.graph.outputs[i] : nullptr;
    if (IsWrapper(vi) || !(*outputs)[i].tensor.is_dense()) {
      auto expected = runtime::ReadValueProto(expected_files[i].string(), vi ? vi->type : ir::TypeInfo());
      if (!expected.ok()) {
        return "reading " + expected_files[i].filename().string() + ": " + expected.status().ToString();
      }
      std::string why = CompareValues(*expected, (*outputs)[i].tensor);
      if (!why.empty()) return fmt::format("output {} '{}': {}", i, (*outputs)[i].name, why);
      continue;
    }
    auto expected = runtime::ReadTensorProto(expected_files[i].string());
    if (!expected.ok()) return "reading " + expected_files[i].filename().string() + ": " + expected.status().ToString();
    const runtime::Tensor& got = (*outputs)[i].tensor;
    if (expected->tensor.dtype() == ir::DataType::kUint16 && got.dtype() == ir::DataType::kBfloat16) {
      expected->tensor = AsBfloat16(expected->tensor);
    }
    runtime::TensorComparison c = runtime::CompareTensors(expected->tensor, got, kRtol, kAtol);
    if (!c.ok()) {
      return fmt::format("output {} '{}': expected {}, got {}: {}", i, (*outputs)[i].name,
                         expected->tensor.Describe(), got.Describe(), c.Describe());
    }
  }
  return {};
}

}  // namespace

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPass: return "pass";
    case Outcome::kFail: return "FAIL";
    case Outcome::kKnownFailure: return "known-failure";
    case Outcome::kOutOfScope: return "out-of-scope";
    case Outcome::kNotOnDevice: return "not-on-device";
  }
  return "?";
}

Result<KnownFailures> ReadKnownFailures(const std::string& path) {
  std::ifstream in(path);
  if (!in) return EnvironmentError("cannot read the known-failures file '{}'", path);
  KnownFailures k;
  std::string line;
  while (std::getline(in, line)) {
    std::string reason;
    if (auto hash = line.find('#'); hash != std::string::npos) {
      reason = line.substr(hash + 1);
      line = line.substr(0, hash);
    }
    std::istringstream words(line);
    std::string first, second;
    if (!(words >> first)) continue;
    auto trim = [](std::string s) {
      s.erase(0, s.find_first_not_of(' '));
      return s;
    };
    if (first == "out-of-scope-op" && words >> second) k.out_of_scope_ops[second] = trim(reason);
    else if (first == "out-of-scope-dtype" && words >> second) {
      const int32_t wire = DtypeByOnnxName(second);
      if (wire < 0) return InvalidInputError("{}: '{}' is not a TensorProto data type this file knows", path, second);
      k.out_of_scope_dtypes[wire] = second + ": " + trim(reason);
    }
    else if (first == "out-of-scope-test" && words >> second) k.out_of_scope_tests[second] = trim(reason);
    else k.tests[first] = trim(reason);
  }
  return k;
}

CaseResult RunCase(const fs::path& dir, const KnownFailures& known, std::shared_ptr<const runtime::Backend> device) {
  if (auto it = known.out_of_scope_tests.find(dir.filename().string()); it != known.out_of_scope_tests.end()) {
    return {Outcome::kOutOfScope, it->second};
  }
  auto model = onnx::ReadModel((dir / "model.onnx").string());
  if (!model.ok()) return {Outcome::kFail, "load: " + FirstLine(model.status().ToString())};
  std::set<std::string> ops;
  CollectOps(model->graph, ops);
  for (const std::string& op : ops) {
    if (auto it = known.out_of_scope_ops.find(op); it != known.out_of_scope_ops.end()) {
      return {Outcome::kOutOfScope, op + ": " + it->second};
    }
  }
  std::set<int32_t> dtypes;
  CollectDtypes(model->graph, dtypes);
  for (int32_t t : dtypes) {
    if (auto it = known.out_of_scope_dtypes.find(t); it != known.out_of_scope_dtypes.end()) {
      return {Outcome::kOutOfScope, it->second};
    }
  }
  runtime::SessionOptions options;
  options.backends = {cpu::MakeCpuBackend()};
  if (device) {
    options.backends.insert(options.backends.begin(), device);
    options.no_fallback = true;
  }
  ir::Model copy = *model;
  auto session = runtime::Session::Create(std::move(copy), options);
  if (!session.ok()) {
    const Status& s = session.status();
    if (device && s.code() == ErrorCode::kUnsupported && s.summary().find("fallback is off") != std::string::npos) {
      std::string reason;
      for (const Fact& f : s.diagnosis().facts) {
        if (f.name == "reason") reason = f.value;
      }
      return {Outcome::kNotOnDevice, FirstLine(s.summary()) + (reason.empty() ? "" : ": " + reason)};
    }
    return {Outcome::kFail, "session: " + FirstLine(s.ToString())};
  }
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return {Outcome::kFail, "no test_data_set_* folders"};
  for (const fs::path& set : sets) {
    std::string why = RunDataSet(**session, *model, set);
    if (!why.empty()) return {Outcome::kFail, set.filename().string() + ": " + why};
  }
  return {Outcome::kPass, {}};
}

}  // namespace vigil::conformance
