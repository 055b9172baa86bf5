// The rows of docs/ops.md: every (domain, op) of the op catalogue and of the
// kernel tables, with the catalogue's opset ranges and each backend's, and
// the markdown written from them. Plain data in, text out: no I/O here.
#pragma once

#include <string>
#include <vector>

namespace vigil::opsdoc {

struct OpsetRange {
  int since = 0;
  int until = 0;  // inclusive; kLatest (INT_MAX) for the current definition
};

// One kernel of a backend's table.
struct KernelEntry {
  std::string domain;  // "" for the default domain
  std::string op;
  OpsetRange opsets;
  bool checks_types = false;  // the kernel decides per node from its dtypes
};

struct OpRow {
  std::string domain;  // "" for the default domain
  std::string op;
  std::vector<OpsetRange> catalogue;  // one per schema, by first opset
  std::vector<OpsetRange> cpu;        // merged coverage of the CPU kernels
  std::vector<OpsetRange> cuda;       // merged coverage of the CUDA kernels
  bool cuda_any_type = false;         // some CUDA kernel of the op takes any dtype
};

// The rows from the catalogue (AllSchemas), the CPU kernels (AllKernels) and
// the CUDA module's `cuda` kernels; sorted: the default domain first, then
// by domain, then by op. Test-only ops (ai.vigil.testing) are left out.
std::vector<OpRow> CollectRows(const std::vector<KernelEntry>& cuda);

// The ONNX operators (onnx_operators.h) the catalogue has no schema for.
std::vector<std::string> MissingOnnxOperators();

// "1-5, 6-12, 13+": ranges as written in the doc.
std::string FormatRanges(const std::vector<OpsetRange>& ranges);

// The whole of docs/ops.md.
std::string RenderMarkdown(const std::vector<OpRow>& rows, const std::vector<std::string>& missing);

// How docs/ops.md is regenerated (in the doc's header and the test's message).
inline constexpr const char* kRegenerateCommand = "cmake --build build --target ops_doc";

}  // namespace vigil::opsdoc
