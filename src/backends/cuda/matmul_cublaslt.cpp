// MatMul and Gemm through cuBLASLt. Row-major ONNX matrices are read as
// column-major transposes, so C = A·B runs as Cᵀ = Bᵀ·Aᵀ with no copies.
// Batched MatMul uses strided batches (stride 0 for a broadcast operand);
// other batch broadcasts run one product per output matrix. Gemm's C is a
// bias epilogue when it is a row vector and beta = 1, otherwise it is
// broadcast into the output first and blended with beta. Accumulation is in
// float32; float32 inputs use TF32 only when the session allows it.
// ai.vigil.MatMulBias (the fused MatMul + Add of a Linear layer) is one
// product over A's flattened rows with the bias epilogue; its optional
// residual R is cuBLASLt's C matrix, added with beta = 1; with a GELU
// activation (float16/bfloat16 only) the epilogue is cuBLASLt's GELU_BIAS.
// int8 products (RowMajorGemmInt8, for ai.vigil.QMatMul) run on the same
// plans with int8 operands, int32 accumulation and an int32 result.
#include <charconv>
#include <chrono>
#include <functional>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/dev_switch.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/epilogue.h"
#include "backends/cuda/matmul_cublaslt.h"
#include "backends/cuda/split_tf32.h"
#include "backends/cuda/tuning_cache.h"
#include "ir/fuse_matmul_bias.h"
#include "ir/layout_nhwc.h"  // kVigilDomain
#include "ops/shape_helpers.h"

namespace vigil::cuda {
namespace {

constexpr size_t kMaxWorkspace = kMaxLtWorkspace;  // matmul_cublaslt.h

template <typename T, cublasStatus_t (*Destroy)(T)>
struct LtHandle {
  T h = nullptr;
  LtHandle() = default;
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
  ~LtHandle() {
    if (h) Destroy(h);
  }
};
using OpDesc = LtHandle<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using Layout = LtHandle<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using Preference = LtHandle<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

// One column-major operand as cuBLASLt sees it.
struct Operand {
  uint64_t rows, cols;
  int64_t ld;
  int64_t batch_stride;  // elements; 0 = the same matrix for every batch
};

struct ProductShape {
  cublasOperation_t op_x, op_y;  // x = ONNX B side, y = ONNX A side
  Operand x, y, d;
  int32_t batch;
  bool bias_epilogue;
  bool blend_c;  // beta * C, with C broadcast into D beforehand
  bool residual_c;  // + C, a separate matrix of D's layout (MatMulBias' R)
  bool gelu = false;  // with bias_epilogue: GELU after the bias (cuBLASLt's GELU_BIAS)
  bool relu = false;  // max(., 0) last (cuBLASLt's RELU or RELU_BIAS)
  bool tf32x3 = false;  // x and y are split operands (split_tf32.h): TF32 compute
  bool exact = false;  // float32 on CUDA cores: neither TF32 nor the split, whatever the options
};

// A cuBLASLt plan for one product shape, cached per thread.
struct LtPlan {
  OpDesc op;
  Layout x, y, d;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
};

Result<cudaDataType_t> LtType(ir::DataType t) {
  switch (t) {
    case ir::DataType::kFloat32: return CUDA_R_32F;
    case ir::DataType::kFloat16: return CUDA_R_16F;
    case ir::DataType::kBfloat16: return CUDA_R_16BF;
    case ir::DataType::kInt8: return CUDA_R_8I;
    default: return UnsupportedError("dtype {} in a matrix product", ir::DataTypeName(t));
  }
}

Status MakeLayout(Layout& l, cudaDataType_t type, const Operand& o, int32_t batch) {
  VIGIL_CUBLAS_CALL(cublasLtMatrixLayoutCreate(&l.h, type, o.rows, o.cols, o.ld));
  if (batch > 1) {
    VIGIL_CUBLAS_CALL(cublasLtMatrixLayoutSetAttribute(l.h, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
    VIGIL_CUBLAS_CALL(cublasLtMatrixLayoutSetAttribute(l.h, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                       &o.batch_stride, sizeof o.batch_stride));
  }
  return Status::Ok();
}

// The alignment (power of two, at most 256) of the operands' addresses.
// cuBLASLt's heuristics assume 256-byte alignment unless told otherwise, and
// arena slots and batch offsets are only 64-byte aligned.
struct Alignments {
  uint32_t x, y, d, c;
};

uint32_t AlignmentOf(const void* p) {
  auto v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && v % a != 0) a /= 2;
  return a;
}

std::string Key(const ProductShape& s, ir::DataType t, const CudaOptions& o, const Alignments& al) {
  auto op = [](const Operand& x) { return fmt::format("{}x{}l{}s{}", x.rows, x.cols, x.ld, x.batch_stride); };
  return fmt::format("lt|{}|{}{}|{}|{}|{}|b{}|{}{}{}|{}{}|a{},{},{},{}{}{}{}{}", static_cast<int>(t),
                     static_cast<int>(s.op_x), static_cast<int>(s.op_y), op(s.x), op(s.y), op(s.d), s.batch,
                     s.bias_epilogue, s.blend_c, s.residual_c, o.allow_tf32, o.deterministic, al.x, al.y, al.d, al.c,
                     s.tf32x3 ? "|tf32x3" : "", s.gelu ? "|gelu" : "", s.relu ? "|relu" : "",
                     s.exact ? "|exact" : "");
}

// --- autotuning (plan_tuning.h) ----------------------------------------------

// One product's operands, for timing candidate algorithms; D goes to scratch
// memory of `d_bytes`, so the real output is written once.
struct LtOperands {
  const void* a;
  const void* b;
  const void* c;
  const void* bias;
  float alpha, beta;
  size_t d_bytes;
  // int8 products scale in int32 (alpha 1, beta 0).
  int32_t int_alpha = 1, int_beta = 0;
  const void* Alpha(bool int8) const { return int8 ? static_cast<const void*>(&int_alpha) : &alpha; }
  const void* Beta(bool int8) const { return int8 ? static_cast<const void*>(&int_beta) : &beta; }
};

// The result's type: int32 for int8 operands, else the operands' own.
cudaDataType_t ResultType(cudaDataType_t operands) { return operands == CUDA_R_8I ? CUDA_R_32I : operands; }

// The algorithm as a tuning-cache choice: "algo" and the 8 words of the
// opaque cublasLtMatmulAlgo_t in hex. The value is only meaningful to the
// cuBLASLt version that made it, which the cache's device key names; a
// recorded one is still checked (cublasLtMatmulAlgoCheck) before use.
std::string AlgoText(const cublasLtMatmulAlgo_t& algo) {
  std::string text = "algo";
  for (uint64_t w : algo.data) text += fmt::format(" {:016x}", w);
  return text;
}

std::optional<cublasLtMatmulAlgo_t> ParseAlgo(const std::string& text) {
  std::istringstream in(text);
  std::string word;
  if (!(in >> word) || word != "algo") return std::nullopt;
  cublasLtMatmulAlgo_t algo{};
  for (uint64_t& w : algo.data) {
    if (!(in >> word) || word.size() != 16) return std::nullopt;
    auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), w, 16);
    if (ec != std::errc() || end != word.data() + word.size()) return std::nullopt;
  }
  if (!(in >> std::ws).eof()) return std::nullopt;
  return algo;
}

// Uses the recorded algorithm when cuBLASLt still accepts it for this product.
bool UseRecorded(CudaKernelContext& ctx, LtPlan& plan, const std::string& text) {
  std::optional<cublasLtMatmulAlgo_t> algo = ParseAlgo(text);
  if (!algo) return false;
  cublasLtMatmulHeuristicResult_t check{};
  if (cublasLtMatmulAlgoCheck(ctx.stream_context().lt, plan.op.h, plan.x.h, plan.y.h, plan.d.h, plan.d.h, &*algo,
                              &check) != CUBLAS_STATUS_SUCCESS ||
      check.workspaceSize > kMaxWorkspace) {
    return false;
  }
  plan.algo = *algo;
  plan.workspace = check.workspaceSize;
  return true;
}

// Times the heuristics' candidates on `o` and keeps the fastest in `plan`,
// recording it as `problem` in `cache` when given (autotuning).
Status MeasureAlgos(CudaKernelContext& ctx, LtPlan& plan, bool bias_epilogue, bool int8,
                    std::span<const cublasLtMatmulHeuristicResult_t> candidates, const LtOperands& o,
                    const std::string& problem, TuningCache* cache) {
  const auto start = std::chrono::steady_clock::now();
  cudaStream_t stream = ctx.stream();
  void* scratch = nullptr;
  VIGIL_CUDA_CALL(cudaMallocAsync(&scratch, std::max<size_t>(o.d_bytes, 256), stream));
  std::unique_ptr<void, std::function<void(void*)>> owned(scratch, [stream](void* p) { cudaFreeAsync(p, stream); });
  if (bias_epilogue) {
    VIGIL_CUBLAS_CALL(cublasLtMatmulDescSetAttribute(plan.op.h, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &o.bias,
                                                     sizeof o.bias));
  }
  size_t best = 0;
  double best_us = -1, first_us = -1;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const cublasLtMatmulHeuristicResult_t& r = candidates[i];
    if (r.state != CUBLAS_STATUS_SUCCESS) continue;
    VIGIL_ASSIGN_OR_RETURN(void* workspace, ctx.stream_context().Workspace(r.workspaceSize));
    Result<double> us = MedianMicros(stream, [&]() -> Status {
      VIGIL_CUBLAS_CALL(cublasLtMatmul(ctx.stream_context().lt, plan.op.h, o.Alpha(int8), o.b, plan.x.h, o.a,
                                       plan.y.h, o.Beta(int8), o.c, plan.d.h, scratch, plan.d.h, &r.algo, workspace,
                                       r.workspaceSize, stream));
      return Status::Ok();
    }, 5, best_us < 0 ? 1e300 : 1.5 * best_us);  // a clear loser stops at its first timed run
    if (!us.ok()) {
      VIGIL_RETURN_IF_ERROR(StickyError());  // a device fault is the run's, not the candidate's
      continue;
    }
    if (i == 0) first_us = *us;
    if (best_us < 0 || *us < best_us) {
      best_us = *us;
      best = i;
    }
  }
  plan.algo = candidates[best].algo;
  plan.workspace = candidates[best].workspaceSize;
  if (!cache) {
    if (FirstRunMeasures* counted = ctx.stream_context().tuning.first_run) {
      counted->Add(FirstRunMeasures::Kind::kProduct, SecondsSince(start));
    }
    return Status::Ok();
  }
  if (best_us >= 0) cache->Record(problem, AlgoText(plan.algo), best_us, first_us < 0 ? best_us : first_us);
  cache->AddTuningTime(SecondsSince(start));
  return Status::Ok();
}

// Large float products measure the heuristics' candidates on their first
// run even without autotuning: the first pick is often not the fastest
// there, and a few milliseconds of measuring once buys more than that on
// every run. On an H200, float16 [12608 x 768] by [768 x 3072] with the
// GELU epilogue (ViT-B/16's MLP at batch 64): the first of 8 candidates
// 123 us, the fastest 96 us. Products of at least 2^31 multiply-adds:
// transformer layers at batch 64, not at batch 1. Not with `deterministic`
// (the choice may differ from one session to the next), nor without the
// session option measure_first_run; VIGIL_MEASURE_PRODUCTS=0 keeps the first
// pick too (before/after measurements).
constexpr double kMinMeasuredMacs = double(int64_t{1} << 31);

// Exact products (convolutions as products, conv_gemm.h) keep the first
// pick: on ResNet-50 at batch 64 (H200) measuring its 17 large ones made
// it under 1% faster (13.51-13.60 ms against 13.64-13.72) and added 0.2-0.3 s
// to its first result. --tune still measures them.
bool WorthMeasuring(const ProductShape& s, ir::DataType dtype, const CudaOptions& options) {
  if (dtype == ir::DataType::kInt8 || s.exact || options.deterministic || !options.measure_first_run) return false;
  const double m = double(s.d.cols), n = double(s.d.rows);
  const double k = double(s.op_x == CUBLAS_OP_N ? s.x.cols : s.x.rows);
  return m * n * k * double(s.batch) >= kMinMeasuredMacs && DevSwitchOn("VIGIL_MEASURE_PRODUCTS");
}

// The cuBLASLt plan of a product shape, built on first use per thread: the
// heuristics' first algorithm, or with autotuning the recorded one or the
// fastest measured on `operands` (null: not measured); a large product
// (WorthMeasuring) is measured without autotuning too, and not recorded.
Result<const LtPlan*> GetPlan(CudaKernelContext& ctx, const ProductShape& s, ir::DataType dtype,
                              const Alignments& al, const LtOperands* operands) {
  std::string key = Key(s, dtype, ctx.options(), al);
  auto& cache = ctx.stream_context().plans;
  if (auto it = cache.find(key); it != cache.end()) return static_cast<const LtPlan*>(it->second.get());
  auto plan = std::make_shared<LtPlan>();
  VIGIL_ASSIGN_OR_RETURN(cudaDataType_t type, LtType(dtype));
  const bool int8 = dtype == ir::DataType::kInt8;
  cublasComputeType_t compute = int8 ? CUBLAS_COMPUTE_32I
                                : dtype == ir::DataType::kFloat32 && !s.exact && (ctx.options().allow_tf32 || s.tf32x3)
                                    ? CUBLAS_COMPUTE_32F_FAST_TF32
                                    : CUBLAS_COMPUTE_32F;
  VIGIL_CUBLAS_CALL(cublasLtMatmulDescCreate(&plan->op.h, compute, int8 ? CUDA_R_32I : CUDA_R_32F));
  VIGIL_CUBLAS_CALL(cublasLtMatmulDescSetAttribute(plan->op.h, CUBLASLT_MATMUL_DESC_TRANSA, &s.op_x, sizeof s.op_x));
  VIGIL_CUBLAS_CALL(cublasLtMatmulDescSetAttribute(plan->op.h, CUBLASLT_MATMUL_DESC_TRANSB, &s.op_y, sizeof s.op_y));
  if (s.bias_epilogue) {
    cublasLtEpilogue_t epilogue = s.gelu   ? CUBLASLT_EPILOGUE_GELU_BIAS
                                  : s.relu ? CUBLASLT_EPILOGUE_RELU_BIAS
                                           : CUBLASLT_EPILOGUE_BIAS;
    VIGIL_CUBLAS_CALL(
        cublasLtMatmulDescSetAttribute(plan->op.h, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
    VIGIL_CUBLAS_CALL(
        cublasLtMatmulDescSetAttribute(plan->op.h, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &type, sizeof type));
  } else if (s.relu) {
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_RELU;
    VIGIL_CUBLAS_CALL(
        cublasLtMatmulDescSetAttribute(plan->op.h, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
  }
  VIGIL_RETURN_IF_ERROR(MakeLayout(plan->x, type, s.x, s.batch));
  VIGIL_RETURN_IF_ERROR(MakeLayout(plan->y, type, s.y, s.batch));
  VIGIL_RETURN_IF_ERROR(MakeLayout(plan->d, ResultType(type), s.d, s.batch));
  Preference pref;
  VIGIL_CUBLAS_CALL(cublasLtMatmulPreferenceCreate(&pref.h));
  size_t ws = kMaxWorkspace;
  VIGIL_CUBLAS_CALL(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                         sizeof ws));
  VIGIL_CUBLAS_CALL(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al.x,
                                                         sizeof al.x));
  VIGIL_CUBLAS_CALL(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al.y,
                                                         sizeof al.y));
  VIGIL_CUBLAS_CALL(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al.c,
                                                         sizeof al.c));
  VIGIL_CUBLAS_CALL(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al.d,
                                                         sizeof al.d));
  if (ctx.options().deterministic) {
    // In-place split-K reductions accumulate with atomics: their order varies.
    uint32_t mask = CUBLASLT_REDUCTION_SCHEME_MASK & ~static_cast<uint32_t>(CUBLASLT_REDUCTION_SCHEME_INPLACE);
    VIGIL_CUBLAS_CALL(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask,
                                                           sizeof mask));
  }
  const TuningPolicy tuning = ctx.stream_context().tuning;
  const std::string problem = "cublaslt|" + key;
  bool recorded = false;
  if (tuning.cache) {
    if (std::optional<std::string> text = tuning.cache->Find(problem)) {
      recorded = UseRecorded(ctx, *plan, *text);
      if (recorded) {
        tuning.cache->CountHit();
      } else {
        tuning.cache->CountStale();
      }
    }
  }
  const bool tune = tuning.cache && tuning.measure;
  bool measure = !recorded && operands && (tune || WorthMeasuring(s, dtype, ctx.options()));
  if (measure) {
    VIGIL_ASSIGN_OR_RETURN(bool recording, StreamRecording(ctx.stream()));
    measure = !recording;
  }
  if (!recorded) {
    cublasLtMatmulHeuristicResult_t results[kMaxTuningCandidates] = {};
    int found = 0;
    VIGIL_CUBLAS_CALL(cublasLtMatmulAlgoGetHeuristic(ctx.stream_context().lt, plan->op.h, plan->x.h, plan->y.h,
                                                     plan->d.h, plan->d.h, pref.h, measure ? kMaxTuningCandidates : 1,
                                                     results, &found));
    if (found == 0) {
      return ctx.Unsupported("cuBLASLt has no algorithm for a {} product of {}x{} by {}x{} (batch {})",
                             ir::DataTypeName(dtype), s.x.rows, s.x.cols, s.y.rows, s.y.cols, s.batch);
    }
    plan->algo = results[0].algo;
    plan->workspace = results[0].workspaceSize;
    if (measure) {
      VIGIL_RETURN_IF_ERROR(MeasureAlgos(ctx, *plan, s.bias_epilogue, int8,
                                         std::span(results, static_cast<size_t>(found)), *operands, problem,
                                         tune ? tuning.cache : nullptr));
    }
  }
  const LtPlan* raw = plan.get();
  cache.emplace(key, std::move(plan));
  return raw;
}

// D = alpha * A·B (+ bias) + beta * C, where C is `c` when given (in D's
// layout), else D itself (blend_c: C already broadcast into D).
Status DirectProduct(CudaKernelContext& ctx, const ProductShape& s, ir::DataType dtype, const void* a, const void* b,
                     void* d, const void* bias, float alpha, float beta, const void* c) {
  if (!c) c = d;
  Alignments al{AlignmentOf(b), AlignmentOf(a), AlignmentOf(d), AlignmentOf(c)};
  // D's extent in bytes: the last batch's matrix ends `ld * cols` past its start.
  const bool int8 = dtype == ir::DataType::kInt8;
  const size_t esize = int8 ? 4 : static_cast<size_t>(ir::DataTypeBits(dtype) / 8);
  const size_t d_bytes = (static_cast<size_t>(s.batch - 1) * static_cast<size_t>(s.d.batch_stride) +
                          static_cast<size_t>(s.d.ld) * s.d.cols) * esize;
  const LtOperands operands{a, b, c, bias, alpha, beta, d_bytes};
  VIGIL_ASSIGN_OR_RETURN(const LtPlan* plan, GetPlan(ctx, s, dtype, al, &operands));
  if (s.bias_epilogue) {
    VIGIL_CUBLAS_CALL(cublasLtMatmulDescSetAttribute(plan->op.h, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                     sizeof bias));
  }
  VIGIL_ASSIGN_OR_RETURN(void* workspace, ctx.stream_context().Workspace(plan->workspace));
  VIGIL_CUBLAS_CALL(cublasLtMatmul(ctx.stream_context().lt, plan->op.h, operands.Alpha(int8), b, plan->x.h, a,
                                   plan->y.h, operands.Beta(int8), c, plan->d.h, d, plan->d.h, &plan->algo, workspace,
                                   plan->workspace, ctx.stream()));
  return Status::Ok();
}

// --- float32 products as 3xTF32 (split_tf32.h) -------------------------------

// The scratch a split product may use; a larger one is computed in slices
// of D's columns (A's rows), or not split.
constexpr size_t kMaxSplitScratch = size_t{256} << 20;

// A split pays where the product is large and compute-bound: its inner work
// per element moved (m·n·k over the operands' and result's elements) must
// exceed what the split's own passes over A and B cost. Transformer
// products at batch 1 (M = 128 to 197 rows, intensity 96 to 149) stay
// below it; at batch 64 they are far above it. On an H200, a threshold of
// 96 split them at batch 1 too and made BERT-base 1.28x and ViT-B/16 1.03x
// slower there (bench/results/tf32x3_h200.md).
constexpr double kMinSplitIntensity = 160;
constexpr double kMinSplitMacs = double(1 << 26);

// Elements of one operand as the split sees it: `count` matrices of
// `outer` contiguous vectors of `inner` (its ld must be its row count).
struct SplitOperand {
  int64_t count, outer, inner;
  bool k_inner;  // the product's inner dimension runs along the vectors
};

SplitOperand SplitView(const Operand& o, bool k_on_rows, int32_t batch) {
  return {o.batch_stride == 0 ? 1 : batch, static_cast<int64_t>(o.cols), static_cast<int64_t>(o.rows), k_on_rows};
}

// The tripled operand's cuBLASLt view: the inner dimension 3x.
Operand Tripled(const Operand& o, bool k_on_rows) {
  Operand t = o;
  if (k_on_rows) {
    t.rows *= 3;
    t.ld *= 3;
  } else {
    t.cols *= 3;
  }
  if (t.batch_stride != 0) t.batch_stride *= 3;
  return t;
}

// Whether this product runs split: float32 without TF32, the option on, a
// plain layout (ld = rows) and enough work.
bool WantsSplit(const CudaKernelContext& ctx, const ProductShape& s, ir::DataType dtype) {
  if (dtype != ir::DataType::kFloat32 || s.exact || ctx.options().allow_tf32 || !ctx.options().allow_tf32x3) {
    return false;
  }
  for (const Operand* o : {&s.x, &s.y}) {
    const auto rows = static_cast<int64_t>(o->rows), cols = static_cast<int64_t>(o->cols);
    if (o->ld != rows || (o->batch_stride != 0 && o->batch_stride != rows * cols)) return false;
  }
  const double n = double(s.d.rows), m = double(s.d.cols);
  const double k = double(s.op_x == CUBLAS_OP_N ? s.x.cols : s.x.rows);
  const double macs = m * n * k;
  return macs * s.batch >= kMinSplitMacs && macs / (m * k + k * n + m * n) >= kMinSplitIntensity;
}

// D = alpha * A·B (+ bias) + beta * C as one TF32 product of the tripled
// operands, in slices of D's columns when the tripled A would not fit the
// scratch. Returns false in *done (nothing queued) where it cannot split.
Status SplitProduct(CudaKernelContext& ctx, const ProductShape& s, const void* a, const void* b, void* d,
                    const void* bias, float alpha, float beta, const void* c, bool* done) {
  *done = false;
  // x (ONNX B): the inner dimension is x's rows when transposed. y (ONNX A):
  // it is y's rows when not.
  const bool x_k_rows = s.op_x == CUBLAS_OP_T, y_k_rows = s.op_y == CUBLAS_OP_N;
  const SplitOperand xs = SplitView(s.x, x_k_rows, s.batch);
  const SplitOperand ys = SplitView(s.y, y_k_rows, s.batch);
  // The tripled B first, then the tripled A from a 256-byte boundary (the
  // alignment cuBLASLt's fastest kernels assume).
  const size_t x_bytes = (size_t(3 * 4) * size_t(xs.count * xs.outer * xs.inner) + 255) / 256 * 256;
  const size_t y_bytes = size_t(3 * 4) * size_t(ys.count * ys.outer * ys.inner);
  // Slices of D's columns (y's columns when y's inner dimension is along its
  // rows): only for one matrix; a batch must fit whole.
  int64_t slice = static_cast<int64_t>(s.d.cols);
  if (x_bytes + y_bytes > kMaxSplitScratch) {
    if (s.batch != 1 || !y_k_rows || x_bytes >= kMaxSplitScratch) return Status::Ok();
    const size_t per_column = size_t(3 * 4) * size_t(ys.inner);
    slice = static_cast<int64_t>((kMaxSplitScratch - x_bytes) / per_column) / 64 * 64;
    if (slice < 256) return Status::Ok();
  }
  const int64_t x_elems = xs.count * xs.outer * xs.inner;
  if (x_elems >= (int64_t{1} << 30) || int64_t(ys.inner) * slice * ys.count >= (int64_t{1} << 30)) return Status::Ok();
  const size_t y_slice_bytes = size_t(3 * 4) * size_t(ys.count * ys.inner * std::min<int64_t>(slice, ys.outer));
  VIGIL_ASSIGN_OR_RETURN(void* scratch, ctx.stream_context().OperandScratch(x_bytes + y_slice_bytes));
  auto* x3 = static_cast<float*>(scratch);
  float* y3 = x3 + x_bytes / sizeof(float);
  // B3 = [b_hi; b_hi; b_lo], A3 = [a_hi | a_lo | a_hi]: segment 2 of x and
  // segment 1 of y hold lo parts.
  VIGIL_RETURN_IF_ERROR(LaunchSplitTf32(static_cast<const float*>(b), x3, xs.count, xs.outer, xs.inner, xs.k_inner,
                                        2, ctx.stream()));
  ProductShape t = s;
  t.tf32x3 = true;
  t.x = Tripled(s.x, x_k_rows);
  t.y = Tripled(s.y, y_k_rows);
  const int64_t columns = static_cast<int64_t>(s.d.cols);
  const bool sliced = slice < columns;  // then y's columns are D's (y_k_rows)
  for (int64_t c0 = 0; c0 < columns; c0 += slice) {
    const int64_t cols = std::min(slice, columns - c0);
    // y's column c0 starts c0 * ld in; so do D's and C's.
    VIGIL_RETURN_IF_ERROR(LaunchSplitTf32(static_cast<const float*>(a) + c0 * s.y.ld, y3, ys.count,
                                          sliced ? cols : ys.outer, ys.inner, ys.k_inner, 1, ctx.stream()));
    if (sliced) t.y.cols = t.d.cols = static_cast<uint64_t>(cols);
    const float* cp = c ? static_cast<const float*>(c) + c0 * s.d.ld : nullptr;  // null: D itself
    VIGIL_RETURN_IF_ERROR(DirectProduct(ctx, t, ir::DataType::kFloat32, y3, x3, static_cast<float*>(d) + c0 * s.d.ld,
                                        bias, alpha, beta, cp));
  }
  *done = true;
  return Status::Ok();
}

Status Product(CudaKernelContext& ctx, const ProductShape& s, ir::DataType dtype, const void* a, const void* b,
               void* d, const void* bias, float alpha, float beta, const void* c = nullptr) {
  if (WantsSplit(ctx, s, dtype)) {
    bool done = false;
    VIGIL_RETURN_IF_ERROR(SplitProduct(ctx, s, a, b, d, bias, alpha, beta, c, &done));
    if (done) return Status::Ok();
  }
  return DirectProduct(ctx, s, dtype, a, b, d, bias, alpha, beta, c);
}

// ONNX A [M,K] (or [K,M] with trans_a) and B [K,N] (or [N,K]) as cuBLASLt
// operands of Dᵀ[N,M] = op(B)ᵀ·op(A)ᵀ.
ProductShape Shape2D(int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b) {
  ProductShape s{};
  s.op_x = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  s.x = trans_b ? Operand{uint64_t(k), uint64_t(n), k, 0} : Operand{uint64_t(n), uint64_t(k), n, 0};
  s.op_y = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  s.y = trans_a ? Operand{uint64_t(m), uint64_t(k), m, 0} : Operand{uint64_t(k), uint64_t(m), k, 0};
  s.d = Operand{uint64_t(n), uint64_t(m), n, 0};
  s.batch = 1;
  return s;
}

Status Gemm(CudaKernelContext& ctx) {
  const runtime::Tensor& a = *ctx.input(0);
  const runtime::Tensor& b = *ctx.input(1);
  const runtime::Tensor* c = ctx.input(2);
  VIGIL_ASSIGN_OR_RETURN(int64_t trans_a, ops::IntAttr(ctx.node(), "transA", 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t trans_b, ops::IntAttr(ctx.node(), "transB", 0));
  VIGIL_ASSIGN_OR_RETURN(float alpha, ops::FloatAttr(ctx.node(), "alpha", 1.0f));
  VIGIL_ASSIGN_OR_RETURN(float beta, ops::FloatAttr(ctx.node(), "beta", 1.0f));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0));
  int64_t m = y->dim(0), n = y->dim(1);
  int64_t k = trans_a ? a.dim(0) : a.dim(1);
  if (m == 0 || n == 0) return Status::Ok();
  ProductShape s = Shape2D(m, n, k, trans_a != 0, trans_b != 0);
  const void* bias = nullptr;
  float blend = 0.0f;
  if (c && beta != 0.0f) {
    bool row_vector = c->element_count() == static_cast<uint64_t>(n) && (c->rank() == 1 || c->dim(0) == 1) &&
                      !(c->rank() == 0);
    if (row_vector && beta == 1.0f && k > 0) {
      s.bias_epilogue = true;
      bias = c->raw_data();
    } else {
      VIGIL_RETURN_IF_ERROR(LaunchBroadcastCopy(y->raw_data(), c->raw_data(), y->dtype(), c->shape(), y->shape(),
                                                ctx.stream()));
      s.blend_c = true;
      blend = beta;
    }
  }
  if (k == 0) {
    if (s.blend_c && beta != 1.0f) return ctx.Unsupported("an empty inner dimension with beta != 1");
    if (!s.blend_c) VIGIL_CUDA_CALL(cudaMemsetAsync(y->raw_data(), 0, y->byte_size(), ctx.stream()));
    return Status::Ok();
  }
  return Product(ctx, s, y->dtype(), a.raw_data(), b.raw_data(), y->raw_data(), bias, alpha, blend);
}

// Flattened batch index -> element offset of an operand with batch dims
// `dims` broadcast to `out` (right-aligned), in matrices.
int64_t BatchOffset(int64_t index, const std::vector<int64_t>& dims, const std::vector<int64_t>& out) {
  int64_t offset = 0, stride = 1;
  for (size_t i = out.size(); i-- > 0;) {
    int64_t coord = index % out[i];
    index /= out[i];
    size_t lead = out.size() - dims.size();
    if (i >= lead) {
      int64_t d = dims[i - lead];
      if (d != 1) offset += coord * stride;
      stride *= d;
    }
  }
  return offset;
}

Status MatMul(CudaKernelContext& ctx) {
  const runtime::Tensor& a = *ctx.input(0);
  const runtime::Tensor& b = *ctx.input(1);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0));
  std::vector<int64_t> as = a.shape(), bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  std::vector<int64_t> a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  std::vector<int64_t> out_batch(std::max(a_batch.size(), b_batch.size()), 1);
  for (size_t i = 0; i < out_batch.size(); ++i) {
    size_t ia = i + a_batch.size() - out_batch.size(), ib = i + b_batch.size() - out_batch.size();
    int64_t da = i + a_batch.size() >= out_batch.size() ? a_batch[ia] : 1;
    int64_t db = i + b_batch.size() >= out_batch.size() ? b_batch[ib] : 1;
    out_batch[i] = std::max(da, db);
    if (da == 0 || db == 0) out_batch[i] = 0;
  }
  int64_t batches = 1, a_count = 1, b_count = 1;
  for (int64_t d : out_batch) batches *= d;
  for (int64_t d : a_batch) a_count *= d;
  for (int64_t d : b_batch) b_count *= d;
  if (y->element_count() == 0) return Status::Ok();
  if (k == 0) {
    VIGIL_CUDA_CALL(cudaMemsetAsync(y->raw_data(), 0, y->byte_size(), ctx.stream()));
    return Status::Ok();
  }
  ProductShape s = Shape2D(m, n, k, false, false);
  size_t esize = static_cast<size_t>(ir::DataTypeBits(y->dtype()) / 8);
  bool simple = (a_count == batches || a_count == 1) && (b_count == batches || b_count == 1);
  if (simple) {
    if (batches > INT32_MAX) return ctx.Unsupported("{} batches", batches);
    s.batch = static_cast<int32_t>(batches);
    s.x.batch_stride = b_count == 1 ? 0 : k * n;
    s.y.batch_stride = a_count == 1 ? 0 : m * k;
    s.d.batch_stride = m * n;
    return Product(ctx, s, y->dtype(), a.raw_data(), b.raw_data(), y->raw_data(), nullptr, 1.0f, 0.0f);
  }
  // Partial broadcast ([2,1,M,K] x [1,3,K,N]): one product per output matrix.
  for (int64_t i = 0; i < batches; ++i) {
    const auto* pa = static_cast<const uint8_t*>(a.raw_data()) + BatchOffset(i, a_batch, out_batch) * m * k * esize;
    const auto* pb = static_cast<const uint8_t*>(b.raw_data()) + BatchOffset(i, b_batch, out_batch) * k * n * esize;
    auto* pd = static_cast<uint8_t*>(y->raw_data()) + i * m * n * esize;
    VIGIL_RETURN_IF_ERROR(Product(ctx, s, y->dtype(), pa, pb, pd, nullptr, 1.0f, 0.0f));
  }
  return Status::Ok();
}

// R of MatMulBias (input 3), when present: Y's dtype and exactly Y's shape.
Result<const runtime::Tensor*> Residual(CudaKernelContext& ctx, ir::DataType dtype, const std::vector<int64_t>& shape) {
  if (!ctx.has_input(3)) return static_cast<const runtime::Tensor*>(nullptr);
  const runtime::Tensor* r = ctx.input(3);
  if (r->dtype() != dtype || r->shape() != shape) {
    return ctx.Fail("input 3 (R) is {}, expected {} [{}] (Y's dtype and shape; R is not broadcast)", r->Describe(),
                    ir::DataTypeName(dtype), fmt::join(shape, ","));
  }
  return r;
}

// Y = B + R on every row: MatMulBias with an empty inner dimension and a
// residual (the product is zero).
Status BiasPlusResidual(CudaKernelContext& ctx, runtime::Tensor& y, const runtime::Tensor& b,
                        const runtime::Tensor& r, int64_t m, int64_t n) {
  if (r.raw_data() != y.raw_data()) {
    VIGIL_CUDA_CALL(cudaMemcpyAsync(y.raw_data(), r.raw_data(), y.byte_size(), cudaMemcpyDeviceToDevice,
                                    ctx.stream()));
  }
  return LaunchNhwcBiasActivation(y.raw_data(), b.raw_data(), nullptr, y.dtype(), m, n, NhwcActivation::kNone,
                                  ctx.stream());
}

// ai.vigil.MatMulBias(A, W, B[, R]) (ir/fuse_matmul_bias.h): A's rows, all
// leading dims flattened (A is contiguous), times W [K, N], with B [N] added
// by the bias epilogue and R as cuBLASLt's C with beta = 1, so the product
// is written once and never re-read.
Status MatMulBias(CudaKernelContext& ctx) {
  for (size_t i = 0; i < 3; ++i) {
    if (!ctx.has_input(i)) return ctx.Fail("input {} is missing; MatMulBias needs A, W and B", i);
  }
  const runtime::Tensor& a = *ctx.input(0);
  const runtime::Tensor& w = *ctx.input(1);
  const runtime::Tensor& b = *ctx.input(2);
  if (a.rank() < 2 || w.rank() != 2) {
    return ctx.Fail("inputs A {} and W {} must have rank >= 2 and rank 2", a.Describe(), w.Describe());
  }
  const int64_t k = a.dim(a.rank() - 1), n = w.dim(1);
  if (w.dim(0) != k) return ctx.Fail("A {} and W {} do not chain: {} != {}", a.Describe(), w.Describe(), k, w.dim(0));
  if (b.element_count() != static_cast<uint64_t>(n) || b.rank() == 0 || b.rank() > 2 ||
      (b.rank() == 2 && b.dim(0) != 1)) {
    return ctx.Fail("input 2 (B) is {}, expected [{}] or [1, {}]", b.Describe(), n, n);
  }
  if (a.dtype() != w.dtype() || b.dtype() != w.dtype()) {
    return ctx.Fail("A {}, W {} and B {} must have one dtype", a.Describe(), w.Describe(), b.Describe());
  }
  std::vector<int64_t> shape = a.shape();
  shape.back() = n;
  VIGIL_ASSIGN_OR_RETURN(const runtime::Tensor* r, Residual(ctx, a.dtype(), shape));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, a.dtype(), shape));
  if (y->element_count() == 0) return Status::Ok();
  const int64_t m = static_cast<int64_t>(y->element_count()) / n;
  VIGIL_ASSIGN_OR_RETURN(ir::MatMulBiasAct act, ir::MatMulBiasActivationOf(ctx.node()));
  if (act != ir::MatMulBiasAct::kNone && (r || (a.dtype() != ir::DataType::kFloat16 &&
                                                a.dtype() != ir::DataType::kBfloat16))) {
    return ctx.Unsupported("a GELU activation on a {} product{} (float16 and bfloat16 products without R take it)",
                           ir::DataTypeName(a.dtype()), r ? " with a residual" : "");
  }
  if (k == 0) {
    // An empty inner dimension: the product is zero and Y is B (+ R) on every row.
    if (act != ir::MatMulBiasAct::kNone) return ctx.Unsupported("a GELU activation on a product with K = 0");
    if (r) return BiasPlusResidual(ctx, *y, b, *r, m, n);
    return LaunchBroadcastCopy(y->raw_data(), b.raw_data(), y->dtype(), {1, n}, {m, n}, ctx.stream());
  }
  ProductShape s = Shape2D(m, n, k, false, false);
  s.bias_epilogue = true;
  s.residual_c = r != nullptr;
  s.gelu = act != ir::MatMulBiasAct::kNone;
  // R is C, read with D's layout and beta = 1; D stays Y's own pointer.
  // The arena never gives Y the slot of a value still read at Y's step (R's
  // lifetime includes this step), so R and Y are distinct in practice; were
  // they one buffer, cuBLASLt allows C == D with the same layout.
  return Product(ctx, s, y->dtype(), a.raw_data(), w.raw_data(), y->raw_data(), b.raw_data(), 1.0f, r ? 1.0f : 0.0f,
                 r ? r->raw_data() : nullptr);
}

bool FloatProduct(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  return AllInputsFloat(node, types, why_not);
}

// A, W, B and the optional residual R, all of one float dtype. A GELU
// activation runs in cuBLASLt's GELU_BIAS epilogue, which approximates the
// exact GELU (measured: within float16's rounding of it; docs/cuda.md,
// "Numerics"): float16 and bfloat16 products only, without R, with K > 0.
bool MatMulBiasSupported(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (node.inputs.size() < 3 || node.inputs.size() > 4) {
    if (why_not) *why_not = fmt::format("MatMulBias with {} inputs (it takes 3 or 4)", node.inputs.size());
    return false;
  }
  if (!AllInputsFloat(node, types, why_not)) return false;
  Result<ir::MatMulBiasAct> act = ir::MatMulBiasActivationOf(node);
  if (!act.ok()) {
    if (why_not) *why_not = act.status().summary();
    return false;
  }
  if (*act == ir::MatMulBiasAct::kNone) return true;
  const ir::TypeInfo* a = types.inputs.empty() ? nullptr : types.inputs[0];
  const ir::TypeInfo* w = types.inputs.size() > 1 ? types.inputs[1] : nullptr;
  const bool half = a && (a->elem_type == ir::DataType::kFloat16 || a->elem_type == ir::DataType::kBfloat16);
  const bool empty_k = w && w->shape.rank_known && !w->shape.dims.empty() && w->shape.dims[0].is_known() &&
                       *w->shape.dims[0].value == 0;
  if (!half || node.inputs.size() != 3 || empty_k) {
    if (why_not) {
      *why_not = "a GELU activation runs in cuBLASLt's epilogue for float16 and bfloat16 products without R "
                 "(float32 keeps its exact Gelu)";
    }
    return false;
  }
  return true;
}

}  // namespace

Status RowMajorGemm(CudaKernelContext& ctx, ir::DataType dtype, int64_t m, int64_t n, int64_t k, const void* a,
                    bool trans_a, const void* b, bool trans_b, void* c, float alpha, float beta) {
  if (m == 0 || n == 0) return Status::Ok();
  if (k == 0) return ctx.Unsupported("a matrix product with an empty inner dimension");
  ProductShape s = Shape2D(m, n, k, trans_a, trans_b);
  s.blend_c = beta != 0.0f;
  return Product(ctx, s, dtype, a, b, c, nullptr, alpha, beta);
}

Status RowMajorGemmNT(CudaKernelContext& ctx, ir::DataType dtype, int64_t m, int64_t n, int64_t k, const void* a,
                      const void* b_nk, void* y, const ProductEpilogue& e, bool exact) {
  if (m == 0 || n == 0) return Status::Ok();
  if (k == 0) return ctx.Unsupported("a matrix product with an empty inner dimension");
  ProductShape s = Shape2D(m, n, k, false, true);
  s.bias_epilogue = e.bias != nullptr;
  s.residual_c = e.residual != nullptr;
  s.relu = e.relu;
  s.exact = exact;
  return Product(ctx, s, dtype, a, b_nk, y, e.bias, 1.0f, e.residual ? 1.0f : 0.0f, e.residual);
}

Status RowMajorGemmInt8(CudaKernelContext& ctx, int64_t m, int64_t n, int64_t k, const int8_t* a, const int8_t* b_nk,
                        int32_t* c) {
  if (m == 0 || n == 0) return Status::Ok();
  if (k == 0) {
    VIGIL_CUDA_CALL(cudaMemsetAsync(c, 0, static_cast<size_t>(m * n) * 4, ctx.stream()));
    return Status::Ok();
  }
  // "TN" as cuBLASLt's int8 engines want it: K contiguous in both operands.
  ProductShape s = Shape2D(m, n, k, false, true);
  return Product(ctx, s, ir::DataType::kInt8, a, b_nk, c, nullptr, 1.0f, 0.0f);
}

std::span<const CudaKernelDef> MatMulCudaKernels() {
  static const CudaKernelDef kDefs[] = {
      {"", "MatMul", 1, kLatest, MatMul, FloatProduct, 0},
      {"", "Gemm", 7, kLatest, Gemm, FloatProduct, 0},
      {ir::kVigilDomain, ir::kMatMulBiasOp, 1, kLatest, MatMulBias, MatMulBiasSupported, 0},
  };
  return kDefs;
}

}  // namespace vigil::cuda
