#include "cli/reduce_output.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "cli/random_inputs.h"
#include "onnx/writer.h"
#include "runtime/tensor_file.h"

namespace vigil::cli {
namespace fs = std::filesystem;

std::vector<std::string> SafeFileNames(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  std::set<std::string> taken;
  for (const std::string& name : names) {
    std::string safe;
    for (char c : name) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                c == '-' || c == '.';
      safe += ok ? c : '_';
    }
    if (safe.empty() || safe[0] == '.') safe = "v" + safe;  // no hidden files, no "." or ".."
    std::string unique = safe;
    for (int n = 2; !taken.insert(unique).second; ++n) unique = fmt::format("{}_{}", safe, n);
    out.push_back(unique);
  }
  return out;
}

std::string DefaultReducedPath(const std::string& model_path) {
  return fs::path(model_path).stem().string() + ".reduced.onnx";
}

std::string InputsDirFor(const std::string& output_path) {
  fs::path p(output_path);
  return (p.parent_path() / (p.stem().string() + "_inputs")).string();
}

Result<std::string> MakeTempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = fmt::format("{}/{}-XXXXXX", tmp && *tmp ? tmp : "/tmp", prefix);
  if (!mkdtemp(pattern.data())) {
    return EnvironmentError("cannot create a temporary directory {}: {}", pattern, std::strerror(errno))
        .WithFix("set TMPDIR to a writable directory");
  }
  return pattern;
}

Result<WrittenSubgraph> WriteSubgraph(const ir::Model& sub,
                                      const std::unordered_map<std::string, runtime::Tensor>& values,
                                      const std::string& model_path, const std::string& inputs_dir) {
  WrittenSubgraph written;
  written.model_path = model_path;
  std::error_code ec;
  fs::create_directories(inputs_dir, ec);
  if (ec) return EnvironmentError("cannot create the directory {}: {}", inputs_dir, ec.message());
  VIGIL_RETURN_IF_ERROR(onnx::WriteModel(sub, model_path));
  std::vector<std::string> names;
  for (const ir::ValueInfo& vi : sub.graph.inputs) names.push_back(vi.name);
  const std::vector<std::string> files = SafeFileNames(names);
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string path = (fs::path(inputs_dir) / (files[i] + ".npy")).string();
    auto v = values.find(names[i]);
    if (v != values.end()) {
      VIGIL_RETURN_IF_ERROR(runtime::WriteNpy(path, v->second));
    } else {
      // Seeded by name, so every candidate that needs this value sees the same one.
      auto seed = static_cast<uint32_t>(std::hash<std::string>{}(names[i]));
      auto made = RandomTensor(names[i], sub.graph.inputs[i].type, seed);
      if (!made.ok()) {
        return std::move(made).TakeStatus().WithContext(
            fmt::format("'{}' was not recorded (it depends on a node the recording could not run)", names[i]));
      }
      VIGIL_RETURN_IF_ERROR(runtime::WriteNpy(path, *made));
      written.made_up.push_back(names[i]);
    }
    written.inputs.emplace_back(names[i], path);
  }
  return written;
}

namespace {

std::string TypeText(const ir::ValueInfo& vi) { return vi.has_type ? ir::TypeToString(vi.type) : "(type unknown)"; }

}  // namespace

std::string DescribeSubgraph(const ir::Model& sub, const std::vector<size_t>& original_indices,
                             const WrittenSubgraph& written) {
  std::string text = fmt::format("nodes ({}):\n", sub.graph.nodes.size());
  for (size_t i = 0; i < sub.graph.nodes.size(); ++i) {
    const ir::Node& n = sub.graph.nodes[i];
    std::string op = n.domain.empty() || n.domain == "ai.onnx" ? n.op_type : n.domain + "." + n.op_type;
    text += fmt::format("  #{:<5} {:<28} {}\n", original_indices[i], op, n.name.empty() ? "(unnamed)" : "'" + n.name + "'");
  }
  text += fmt::format("inputs ({}):\n", sub.graph.inputs.size());
  for (size_t i = 0; i < sub.graph.inputs.size(); ++i) {
    const ir::ValueInfo& vi = sub.graph.inputs[i];
    bool made_up = std::find(written.made_up.begin(), written.made_up.end(), vi.name) != written.made_up.end();
    text += fmt::format("  {:<24} {:<24} {}{}\n", vi.name, TypeText(vi), written.inputs[i].second,
                        made_up ? " (not recorded: random values)" : "");
  }
  text += fmt::format("outputs ({}):\n", sub.graph.outputs.size());
  for (const ir::ValueInfo& vi : sub.graph.outputs) text += fmt::format("  {:<24} {}\n", vi.name, TypeText(vi));
  return text;
}

nlohmann::json SubgraphJson(const ir::Model& sub, const std::vector<size_t>& original_indices,
                            const WrittenSubgraph& written) {
  nlohmann::json nodes = nlohmann::json::array(), inputs = nlohmann::json::array(),
                 outputs = nlohmann::json::array();
  for (size_t i = 0; i < sub.graph.nodes.size(); ++i) {
    const ir::Node& n = sub.graph.nodes[i];
    nodes.push_back({{"index", original_indices[i]}, {"op_type", n.op_type}, {"domain", n.domain}, {"name", n.name}});
  }
  for (size_t i = 0; i < sub.graph.inputs.size(); ++i) {
    const ir::ValueInfo& vi = sub.graph.inputs[i];
    bool made_up = std::find(written.made_up.begin(), written.made_up.end(), vi.name) != written.made_up.end();
    inputs.push_back({{"name", vi.name}, {"type", TypeText(vi)}, {"file", written.inputs[i].second},
                      {"recorded", !made_up}});
  }
  for (const ir::ValueInfo& vi : sub.graph.outputs) outputs.push_back({{"name", vi.name}, {"type", TypeText(vi)}});
  return {{"model", written.model_path}, {"nodes", nodes}, {"inputs", inputs}, {"outputs", outputs}};
}

}  // namespace vigil::cli
