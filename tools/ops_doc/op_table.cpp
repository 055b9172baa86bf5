#include "op_table.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "backends/cpu/kernel.h"
#include "backends/cpu/kernel_type_constraints.h"
#include "ir/expand_flex_attention.h"
#include "ops/control_flow.h"
#include "ops/sequence.h"
#include "ops/fault_injection.h"
#include "ops/onnx_operators.h"
#include "ops/schema.h"

namespace vigil::opsdoc {
namespace {

constexpr int kLatest = INT_MAX;
static_assert(kLatest == ops::kLatest && kLatest == cpu::kLatest);

std::string Normal(std::string_view domain) { return ops::IsDefaultDomain(domain) ? "" : std::string(domain); }

// Sorted, with overlapping or adjacent ranges joined: 1-5 and 6+ make 1+.
std::vector<OpsetRange> Merge(std::vector<OpsetRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const OpsetRange& a, const OpsetRange& b) { return std::tie(a.since, a.until) < std::tie(b.since, b.until); });
  std::vector<OpsetRange> out;
  for (const OpsetRange& r : ranges) {
    if (!out.empty() && (out.back().until == kLatest || r.since <= out.back().until + 1)) {
      out.back().until = std::max(out.back().until, r.until);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

bool SameRanges(const std::vector<OpsetRange>& a, const std::vector<OpsetRange>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const OpsetRange& x, const OpsetRange& y) { return x.since == y.since && x.until == y.until; });
}

// "yes" when the kernels cover every opset the catalogue has, "no" for
// none, otherwise the opsets they cover.
std::string Coverage(const OpRow& row, const std::vector<OpsetRange>& kernels) {
  if (kernels.empty()) return "no";
  if (!row.catalogue.empty() && SameRanges(kernels, Merge(row.catalogue))) return "yes";
  return FormatRanges(kernels);
}

std::string DomainName(const std::string& domain) { return domain.empty() ? "ai.onnx" : domain; }

// Sorted by opsets, with adjacent spans of the same dtypes joined.
std::vector<DtypeSpan> MergeSpans(std::vector<DtypeSpan> spans) {
  std::sort(spans.begin(), spans.end(),
            [](const DtypeSpan& a, const DtypeSpan& b) { return a.opsets.since < b.opsets.since; });
  std::vector<DtypeSpan> out;
  for (const DtypeSpan& s : spans) {
    if (!out.empty() && out.back().dtypes == s.dtypes && out.back().decided == s.decided &&
        out.back().no_inputs == s.no_inputs && out.back().opsets.until != kLatest &&
        s.opsets.since <= out.back().opsets.until + 1) {
      out.back().opsets.until = std::max(out.back().opsets.until, s.opsets.until);
    } else {
      out.push_back(s);
    }
  }
  return out;
}

using ir::DataType;

// Short names in the order the doc lists them; groups that are written as
// one word when all of their members are there.
struct ShortName {
  DataType dtype;
  const char* name;
};
constexpr ShortName kShortNames[] = {
    {DataType::kFloat32, "f32"},   {DataType::kFloat16, "f16"},   {DataType::kBfloat16, "bf16"},
    {DataType::kFloat64, "f64"},   {DataType::kInt8, "i8"},       {DataType::kInt16, "i16"},
    {DataType::kInt32, "i32"},     {DataType::kInt64, "i64"},     {DataType::kUint8, "u8"},
    {DataType::kUint16, "u16"},    {DataType::kUint32, "u32"},    {DataType::kUint64, "u64"},
    {DataType::kBool, "bool"},     {DataType::kFloat8E4M3FN, "f8e4m3fn"}, {DataType::kFloat8E4M3FNUZ, "f8e4m3fnuz"},
    {DataType::kFloat8E5M2, "f8e5m2"}, {DataType::kFloat8E5M2FNUZ, "f8e5m2fnuz"}, {DataType::kComplex64, "c64"},
    {DataType::kComplex128, "c128"}, {DataType::kInt4, "i4"},     {DataType::kUint4, "u4"},
    {DataType::kFloat4E2M1, "f4e2m1"}, {DataType::kString, "str"},
};

struct Group {
  uint64_t mask;
  const char* name;
};
constexpr uint64_t kFloat8Mask = cpu::Bit(DataType::kFloat8E4M3FN) | cpu::Bit(DataType::kFloat8E4M3FNUZ) |
                                 cpu::Bit(DataType::kFloat8E5M2) | cpu::Bit(DataType::kFloat8E5M2FNUZ);
constexpr Group kGroups[] = {
    {cpu::kNumericTypes, "numeric"},
    {kFloat8Mask, "float8"},
};

}  // namespace

std::string FormatDtypes(uint64_t mask) {
  if (mask == cpu::kAnyDtype) return "any";
  if (mask == 0) return "none";
  std::vector<std::string> words;
  uint64_t written = 0;
  for (const ShortName& n : kShortNames) {
    const uint64_t bit = cpu::Bit(n.dtype);
    if ((mask & bit) == 0 || (written & bit) != 0) continue;
    const Group* group = nullptr;
    for (const Group& g : kGroups) {
      if ((g.mask & bit) != 0 && (mask & g.mask) == g.mask) group = &g;
    }
    if (group) {
      words.push_back(group->name);
      written |= group->mask;
    } else {
      words.push_back(n.name);
      written |= bit;
    }
  }
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

std::string FormatDtypeSpans(const std::vector<DtypeSpan>& spans) {
  auto text = [](const DtypeSpan& s) -> std::string {
    if (s.no_inputs) return "(no inputs)";
    if (!s.decided) return "*per node*";
    return FormatDtypes(s.dtypes);
  };
  std::vector<DtypeSpan> merged = MergeSpans(spans);
  if (merged.empty()) return "";
  bool all_same = true;
  for (const DtypeSpan& s : merged) all_same = all_same && text(s) == text(merged[0]);
  if (all_same) return text(merged[0]);
  std::string out;
  for (const DtypeSpan& s : merged) {
    if (!out.empty()) out += "; ";
    out += fmt::format("{} ({})", text(s), FormatRanges({s.opsets}));
  }
  return out;
}

std::string FormatRanges(const std::vector<OpsetRange>& ranges) {
  std::string out;
  for (const OpsetRange& r : ranges) {
    if (!out.empty()) out += ", ";
    if (r.until == kLatest) {
      out += fmt::format("{}+", r.since);
    } else if (r.until == r.since) {
      out += fmt::format("{}", r.since);
    } else {
      out += fmt::format("{}-{}", r.since, r.until);
    }
  }
  return out;
}

std::vector<OpRow> CollectRows(const std::vector<KernelEntry>& cuda) {
  // Keyed so that the default domain ("") sorts first.
  std::map<std::pair<std::string, std::string>, OpRow> rows;
  auto row = [&](std::string_view domain, std::string_view op) -> OpRow& {
    std::pair<std::string, std::string> key{Normal(domain), std::string(op)};
    OpRow& r = rows[key];
    r.domain = key.first;
    r.op = key.second;
    return r;
  };
  for (const ops::OpSchema& s : ops::AllSchemas()) {
    row(s.domain, s.name).catalogue.push_back({s.since_version, s.until_version});
  }
  for (const cpu::KernelDef& k : cpu::AllKernels()) {
    OpRow& r = row(k.domain, k.op);
    r.cpu.push_back({k.since_version, k.until_version});
    DtypeSpan span{{k.since_version, k.until_version}};
    const cpu::KernelTypeConstraints* decl = cpu::FindKernelTypeConstraints(k);
    if (decl == nullptr) {
      span.decided = false;  // a kernel without a declaration (a test fails): it decides when it runs
    } else if (decl->variable_count() == 0) {
      span.no_inputs = true;
    } else {
      span.dtypes = decl->variables[0].dtypes;
    }
    r.cpu_dtypes.push_back(span);
  }
  for (const KernelEntry& k : cuda) {
    OpRow& r = row(k.domain, k.op);
    r.cuda.push_back(k.opsets);
    r.cuda_dtypes.push_back({k.opsets, k.dtypes, k.dtypes_decided});
  }
  std::vector<OpRow> out;
  for (auto& [key, r] : rows) {
    if (r.domain == ops::kTestOpDomain) continue;
    std::sort(r.catalogue.begin(), r.catalogue.end(),
              [](const OpsetRange& a, const OpsetRange& b) { return a.since < b.since; });
    r.cpu = Merge(std::move(r.cpu));
    r.cuda = Merge(std::move(r.cuda));
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> MissingOnnxOperators() {
  std::set<std::string> have;
  for (const ops::OpSchema& s : ops::AllSchemas()) {
    if (ops::IsDefaultDomain(s.domain)) have.insert(s.name);
  }
  std::vector<std::string> missing;
  for (const char* name : ops::OnnxOperators()) {
    if (!have.count(name)) missing.push_back(name);
  }
  std::sort(missing.begin(), missing.end());
  return missing;
}

std::string RenderMarkdown(const std::vector<OpRow>& rows, const std::vector<std::string>& missing) {
  size_t onnx = 0, cpu = 0, cuda = 0;
  for (const OpRow& r : rows) {
    if (r.domain.empty() && !r.catalogue.empty()) ++onnx;
    if (!r.cpu.empty()) ++cpu;
    if (!r.cuda.empty()) ++cuda;
  }
  std::string out;
  out += "# Operators\n\n";
  out += fmt::format(
      "<!-- Generated by tools/ops_doc from the op catalogue and the kernel tables; do not edit by hand. "
      "Regenerate with `{}`. -->\n\n",
      kRegenerateCommand);
  out += fmt::format(
      "This file is generated from the code by `{}` (tools/ops_doc): the op catalogue (`ops::AllSchemas()`, "
      "src/ops), the CPU kernel table (`cpu::AllKernels()`, src/backends/cpu) and the CUDA module's kernel table "
      "(`vigil_backend_kernel_table` in libvigil_cuda.so, src/backends/cuda). The test `ops_doc_up_to_date` fails "
      "when it differs from what the code says.\n\n",
      kRegenerateCommand);
  out += fmt::format(
      "{} ops in all, {} of them ONNX operators (ai.onnx); {} have CPU kernels, {} have CUDA kernels. "
      "ONNX 1.23.2 operators vigil does not implement: {} (listed at the end).\n\n",
      rows.size(), onnx, cpu, cuda, missing.size());
  out += "How to read the table:\n\n";
  out += "- **Opsets**: one range per definition in the catalogue (`13+`: opset 13 and later). A node runs only "
         "where the catalogue has its op at the model's opset.\n";
  out += "- **CPU**, **CUDA**: `yes` when the backend has kernels for every opset of the catalogue, `no` when it "
         "has none, otherwise the opsets it has kernels for.\n";
  out += "- **CPU dtypes**: the dtypes the CPU kernel takes for its main type variable (its data input, mostly "
         "input 0), as the kernel declares them (src/backends/cpu/kernel_type_constraints.cpp, one declaration per "
         "kernel, which also names the dtypes of its other inputs: indices, shapes, scales). The CPU backend "
         "refuses, when the model loads, a node whose input dtype is outside its kernel's declaration (\"dtype "
         "int32 of input 0 is not among the CPU ReduceLogSum kernel's dtypes for T (float32, ...)\"); a value "
         "whose dtype is not known at load (from a sequence or an optional) is checked when the node runs.\n";
  out += "- **CUDA dtypes**: the dtypes of the same input that the CUDA kernel takes. Each CUDA kernel has a "
         "support function that decides per node, when the model loads, from the node's dtypes (for some kernels "
         "also its attributes and ranks); a node it refuses runs on the CPU. This column is what those functions "
         "answer for nodes the module synthesizes (src/backends/cuda/kernel_dtype_probe.h: each dtype of the main "
         "input, the other inputs at the dtypes of the CPU declaration, a few ranks, default attributes and `to` "
         "set to the candidate, for Cast; the outputs' dtypes unknown, or where that finds nothing, output 0 at "
         "each dtype); a dtype is listed when some such node is taken, so a kernel that also "
         "looks at attributes or shapes may still refuse a node of it (Resize takes bool only in mode nearest, "
         "its default). *per node* where no synthesized node was taken at all. "
         "`vigil inspect MODEL --backend cuda` shows, for each node of a model, which backend runs it and why "
         "(docs/inspect.md).\n";
  out += "- Dtype names: f32 f16 bf16 f64 (floats), i8 i16 i32 i64, u8 u16 u32 u64, bool, str, c64 c128 "
         "(complex), f8e4m3fn f8e4m3fnuz f8e5m2 f8e5m2fnuz (together: *float8*), i4 u4 f4e2m1; *numeric* is every "
         "float and integer type (f32 f16 bf16 f64 i8 i16 i32 i64 u8 u16 u32 u64), *any* every dtype. Where the "
         "kernels of an op differ between opsets, each list is followed by its opsets.\n";
  out += "- ***control flow***: If, Loop, Scan and SequenceMap have no kernels; the session runs them "
         "(src/runtime/control_flow.h, docs/runtime.md) and their bodies' nodes go to the CPU and CUDA kernels like "
         "any other node.\n";
  out += "- ***sequences***: the sequence and optional ops run on the host, in the session, with either backend "
         "(src/runtime/sequence_ops.h); the tensors they take from or give to other nodes move as usual.\n";
  out += "- ***expanded***: FlexAttention has no kernels; a session replaces it by the ONNX ops it stands for, its "
         "modifier bodies inlined (src/ir/expand_flex_attention.h), and those run on either backend.\n\n";
  out += "| Domain | Op | Opsets | CPU | CPU dtypes | CUDA | CUDA dtypes |\n";
  out += "|---|---|---|---|---|---|---|\n";
  for (const OpRow& r : rows) {
    std::string opsets = r.catalogue.empty() ? "not in the catalogue" : FormatRanges(r.catalogue);
    std::string cpu_cell = Coverage(r, r.cpu);
    std::string cuda_cell = Coverage(r, r.cuda);
    std::string cpu_dtypes = FormatDtypeSpans(r.cpu_dtypes);
    std::string cuda_dtypes = FormatDtypeSpans(r.cuda_dtypes);
    ir::Node probe;
    probe.op_type = r.op;
    probe.domain = r.domain;
    if (ops::IsControlFlowOp(probe)) cpu_cell = cuda_cell = "*control flow*";
    if (ops::IsSequenceOp(probe)) cpu_cell = cuda_cell = "*sequences*";
    if (r.op == ir::kFlexAttentionOp && r.domain == ir::kFlexAttentionDomain) cpu_cell = cuda_cell = "*expanded*";
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", DomainName(r.domain), r.op, opsets, cpu_cell,
                       cpu_dtypes, cuda_cell, cuda_dtypes);
  }
  out += "\n## ONNX operators vigil does not implement\n\n";
  out += "Operators of ONNX 1.23.2 (src/ops/onnx_operators.cpp) with no schema in the catalogue: a model that uses "
         "one is refused when it loads.\n\n";
  for (const std::string& name : missing) out += fmt::format("- {}\n", name);
  return out;
}

}  // namespace vigil::opsdoc
