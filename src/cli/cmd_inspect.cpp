// `vigil inspect MODEL [--json] [--shapes] [--backend cuda]`: what a model
// takes, gives and contains, and with --backend where each node would run.
// A client of the public API: the library describes, this file renders.
#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.h"
#include "user_io.h"

namespace vigil::cli {
namespace {

using nlohmann::json;

struct InspectOptions {
  std::string model_path;
  bool json = false;
  bool shapes = false;
  std::string backend;  // empty: no partition
};

std::string HumanBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string ValueLine(const json& vi) {
  std::string type = Str(vi, "type_text");
  return fmt::format("  {:<24} {}\n", Str(vi, "name"), type.empty() ? std::string("(no type)") : type);
}

std::string PartitionText(const json& p, const std::string& backend) {
  std::string out = fmt::format("partition on {} (after constant folding):", backend);
  for (const auto& [b, n] : p["nodes_per_backend"].items()) out += fmt::format(" {} {}", n.get<uint64_t>(), b);
  out += "\n";
  for (const json& n : p["fallbacks"]) {
    out += fmt::format("  {:<40} -> {}: {}\n", Str(n, "node"), Str(n, "backend"), Str(n, "reason"));
  }
  for (const auto& [key, what] : {std::pair<const char*, const char*>{"int8_convolutions", "convolutions"},
                                   {"int8_matmuls", "matrix products"}}) {
    if (!p.contains(key)) continue;
    size_t int8 = 0;
    for (const json& n : p[key]) int8 += n.value("int8", false);
    out += fmt::format("int8 on {}: {} of {} QDQ {} run in int8", backend, int8, p[key].size(), what);
    out += int8 == p[key].size() ? "\n" : "; the others stay in float:\n";
    for (const json& n : p[key]) {
      if (!n.value("int8", false)) out += fmt::format("  {:<40} {}\n", Str(n, "node"), Str(n, "reason"));
    }
  }
  if (p.contains("layout")) out += fmt::format("layout on {}: {}\n", backend, Str(p, "layout"));
  return out;
}

std::string ModelText(const json& m, bool with_shapes) {
  std::string out = fmt::format("model:      {}\n", Str(m, "model"));
  out += fmt::format("ir_version: {}\n", m.value("ir_version", 0));
  out += fmt::format("producer:   {} {}\n", Str(m, "producer"), Str(m, "producer_version"));
  std::string opsets;
  for (const auto& [domain, version] : m["opsets"].items()) {
    opsets += fmt::format("{}{} {}", opsets.empty() ? "" : ", ", domain.empty() ? "ai.onnx" : domain,
                          version.get<int64_t>());
  }
  out += fmt::format("opsets:     {}\n", opsets.empty() ? "none" : opsets);
  out += fmt::format("inputs ({}):\n", m["inputs"].size());
  for (const json& vi : m["inputs"]) out += ValueLine(vi);
  out += fmt::format("outputs ({}):\n", m["outputs"].size());
  for (const json& vi : m["outputs"]) out += ValueLine(vi);
  const uint64_t nodes = m.value("nodes", uint64_t{0}), all = m.value("nodes_including_subgraphs", uint64_t{0});
  out += fmt::format("nodes:      {}", nodes);
  if (m.value("subgraphs", uint64_t{0})) {
    out += fmt::format(" (+{} in {} subgraphs)", all - nodes, m.value("subgraphs", uint64_t{0}));
  }
  out += "\nops:\n";
  for (const auto& [op, count] : m["ops"].items()) out += fmt::format("  {:<24} {}\n", op, count.get<uint64_t>());
  if (m.contains("unsupported_ops") && !m["unsupported_ops"].empty()) {
    out += fmt::format("not in vigil's op catalogue ({}; a session cannot be created):\n", m["unsupported_ops"].size());
    for (const json& u : m["unsupported_ops"]) {
      const std::string domain = Str(u, "domain");
      out += fmt::format("  {:<24} {:<4} {}\n", domain.empty() ? Str(u, "op") : domain + "::" + Str(u, "op"),
                         u.value("nodes", uint64_t{0}), Str(u, "reason"));
    }
  }
  out += fmt::format("parameters: {} ({})\n", m.value("parameters", uint64_t{0}),
                     HumanBytes(m.value("parameter_bytes", uint64_t{0})));
  if (m.value("functions", uint64_t{0})) out += fmt::format("functions:  {}\n", m.value("functions", uint64_t{0}));
  if (with_shapes) {
    out += "node shapes (execution order):\n";
    for (const json& s : m["node_shapes"]) {
      out += fmt::format("  #{:<4} {:<32}", s.value("index", uint64_t{0}), Str(s, "node"));
      size_t i = 0;
      for (const json& o : s["outputs"]) out += fmt::format("{}{}", i++ ? ", " : "", o.get<std::string>());
      if (s.value("flops", uint64_t{0})) out += fmt::format("  ({:.3g} FLOP)", static_cast<double>(s.value("flops", uint64_t{0})));
      out += "\n";
    }
    out += fmt::format("FLOPs:      {:.4g} (Conv, ConvTranspose, Gemm, MatMul; 2 per multiply-add; symbolic dims = 1)\n",
                       static_cast<double>(m.value("flops", uint64_t{0})));
  }
  return out;
}

int RunInspect(const InspectOptions& opt) {
  try {
    json model = json::parse(vigil::DescribeModelJson(opt.model_path, opt.shapes));
    json partition;
    if (!opt.backend.empty()) {
      BackendChoice choice;
      choice.backend = opt.backend;
      vigil::Session session(opt.model_path, ToSessionOptions(choice));
      partition = json::parse(session.DescribeJson());
      partition["backend"] = opt.backend;
      partition.erase("backends");
    }
    if (opt.json) {
      if (!partition.is_null()) model["partition"] = partition;
      std::printf("%s\n", model.dump(2, ' ', false, json::error_handler_t::replace).c_str());
    } else {
      std::string text = ModelText(model, opt.shapes);
      if (!partition.is_null()) text += PartitionText(partition, opt.backend);
      std::fwrite(text.data(), 1, text.size(), stdout);
    }
    return kExitOk;
  } catch (const vigil::Error& e) {
    return ReportError(e, opt.json);
  }
}

}  // namespace

Command AddInspectCommand(CLI::App& parent) {
  auto opt = std::make_shared<InspectOptions>();
  CLI::App* sub = parent.add_subcommand(
      "inspect",
      "Describe a model: inputs and outputs (dtype, shape with symbolic dims), opsets, op counts and "
      "parameters. The model is read and validated; a malformed model gives exit 1 with a diagnosis.");
  sub->add_option("MODEL", opt->model_path, "ONNX model file (.onnx)")->required();
  sub->add_flag("--json", opt->json, "print JSON instead of text (errors too, as {\"ok\":false,...})");
  sub->add_flag("--shapes", opt->shapes,
                "also infer every node's output types (symbolic dims stay symbolic) and the FLOPs of Conv, "
                "ConvTranspose, Gemm and MatMul");
  sub->add_option("--backend", opt->backend,
                  "also show where each node would run on this backend (cpu or cuda): the node count per "
                  "backend and, for each node that falls back to the CPU, why")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  return {sub, [opt] { return RunInspect(*opt); }};
}

}  // namespace vigil::cli
