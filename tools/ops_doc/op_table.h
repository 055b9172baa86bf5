// The rows of docs/ops.md: every (domain, op) of the op catalogue and of the
// kernel tables, with the catalogue's opset ranges and each backend's, and
// the markdown written from them. Plain data in, text out: no I/O here.
#pragma once

#include <cstdint>
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
  // The dtypes of its main input it takes (bit d: ONNX dtype d); unknown
  // (the kernel decides per node) when !dtypes_decided.
  uint64_t dtypes = 0;
  bool dtypes_decided = false;
};

// The dtypes a backend's kernels take over a range of opsets.
struct DtypeSpan {
  OpsetRange opsets;
  uint64_t dtypes = 0;
  bool decided = true;   // false: decided per node (no dtype list)
  bool no_inputs = false;  // the op has no inputs (Constant)
};

struct OpRow {
  std::string domain;  // "" for the default domain
  std::string op;
  std::vector<OpsetRange> catalogue;  // one per schema, by first opset
  std::vector<OpsetRange> cpu;        // merged coverage of the CPU kernels
  std::vector<OpsetRange> cuda;       // merged coverage of the CUDA kernels
  std::vector<DtypeSpan> cpu_dtypes;  // per CPU kernel: its declared main type variable's dtypes
  std::vector<DtypeSpan> cuda_dtypes; // per CUDA kernel: what its support function takes (probed)
};

// "f32 f16 bf16 f64", "numeric bool", "any": the dtypes of `mask`, short.
std::string FormatDtypes(uint64_t mask);

// The Dtypes cell of a backend: one list, or one per opset range where the
// kernels differ ("f32 f16 bf16 f64 (6-10); numeric (11+)").
std::string FormatDtypeSpans(const std::vector<DtypeSpan>& spans);

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
