// CPU kernels of the linear algebra ops: MatMul, Gemm and Det here, Einsum in
// einsum.cpp. Products go through gemm.h (Eigen for float types); Det is an
// LU factorisation with partial pivoting, in double.
#include <cmath>
#include <vector>

#include "backends/cpu/broadcast.h"
#include "backends/cpu/element_codec.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/linalg_compute.h"
#include "backends/cpu/matmul_plan.h"
#include "backends/cpu/kernel_families.h"

namespace vigil::cpu {
namespace {

// Offsets (in elements) of each matrix of `shape`'s batch dims, for every
// index of the broadcast batch `out_batch` (right-aligned; size-1 dims repeat).
std::vector<int64_t> BatchOffsets(const std::vector<int64_t>& batch, const std::vector<int64_t>& out_batch,
                                  int64_t matrix_size) {
  const size_t rank = out_batch.size();
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = matrix_size;
  for (size_t i = batch.size(); i-- > 0;) {
    strides[rank - batch.size() + i] = batch[i] == 1 ? 0 : stride;
    stride *= batch[i];
  }
  int64_t count = 1;
  for (int64_t d : out_batch) count *= d;
  std::vector<int64_t> offsets;
  offsets.reserve(count);
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < count; ++i) {
    offsets.push_back(offset);
    for (size_t d = rank; d-- > 0;) {  // odometer step
      if (++index[d] < out_batch[d]) {
        offset += strides[d];
        break;
      }
      offset -= strides[d] * (out_batch[d] - 1);
      index[d] = 0;
    }
  }
  return offsets;
}

}  // namespace

Result<MatMulPlan> PlanMatMul(const KernelContext& ctx, const std::vector<int64_t>& a_shape,
                              const std::vector<int64_t>& b_shape) {
  if (a_shape.empty() || b_shape.empty()) {
    return ctx.Fail("input {} is a scalar; {} needs rank 1 or more", a_shape.empty() ? 0 : 1, ctx.node().op_type);
  }
  std::vector<int64_t> a = a_shape, b = b_shape;
  const bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  if (a_vector) a.insert(a.begin(), 1);
  if (b_vector) b.push_back(1);
  MatMulPlan p;
  p.gemm.m = a[a.size() - 2];
  p.gemm.k = a.back();
  p.gemm.n = b.back();
  if (b[b.size() - 2] != p.gemm.k) {
    return ctx.Fail("inner dims differ: A {} has {} columns, B {} has {} rows", ShapeString(a_shape), p.gemm.k,
                    ShapeString(b_shape), b[b.size() - 2]);
  }
  std::vector<int64_t> a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  auto batch = BroadcastShape(a_batch, b_batch);
  if (!batch) {
    return ctx.Fail("batch dims of A {} and B {} do not broadcast", ShapeString(a_shape), ShapeString(b_shape));
  }
  p.out_shape = *batch;
  if (!a_vector) p.out_shape.push_back(p.gemm.m);
  if (!b_vector) p.out_shape.push_back(p.gemm.n);
  p.a_offsets = BatchOffsets(a_batch, *batch, p.gemm.m * p.gemm.k);
  p.b_offsets = BatchOffsets(b_batch, *batch, p.gemm.k * p.gemm.n);
  bool b_shared = true, a_consecutive = true;
  for (size_t i = 0; i < p.a_offsets.size(); ++i) {
    b_shared = b_shared && p.b_offsets[i] == 0;
    a_consecutive = a_consecutive && p.a_offsets[i] == static_cast<int64_t>(i) * p.gemm.m * p.gemm.k;
  }
  p.fold_batch = b_shared && a_consecutive;
  return p;
}

namespace {

template <DataType D>
Status RunMatMul(KernelContext& ctx, const runtime::Tensor& a, const runtime::Tensor& b) {
  VIGIL_ASSIGN_OR_RETURN(MatMulPlan p, PlanMatMul(ctx, a.shape(), b.shape()));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, a.dtype(), p.out_shape));
  if (y->element_count() == 0) return Status::Ok();
  using C = LinalgCompute<D>;
  std::vector<C> a_scratch, b_scratch, y_scratch;
  const C* a_data = LoadLinalg<D>(a, a_scratch);
  const C* b_data = LoadLinalg<D>(b, b_scratch);
  C* y_data = LinalgResultBuffer<D>(*y, y_scratch);
  if (p.fold_batch) {
    GemmShape folded = p.gemm;
    folded.m *= static_cast<int64_t>(p.a_offsets.size());
    GemmRowMajor(folded, a_data, b_data, y_data, C(1), false);
  } else {
    BatchedMatMul(p.gemm, a_data, p.a_offsets, b_data, p.b_offsets, y_data);
  }
  StoreLinalg<D>(y_data, *y);
  return Status::Ok();
}

Status MatMulKernel(KernelContext& ctx) {
  const runtime::Tensor* a = ctx.input(0);
  const runtime::Tensor* b = ctx.input(1);
  if (!a || !b) return ctx.Fail("MatMul needs inputs A and B");
  if (a->dtype() != b->dtype()) {
    return ctx.Fail("A has dtype {} and B has {}; MatMul needs them equal", ir::DataTypeName(a->dtype()),
                    ir::DataTypeName(b->dtype()));
  }
  return DispatchDtype<kLinalgTypes>(
      a->dtype(), [&](auto tag) { return RunMatMul<decltype(tag)::value>(ctx, *a, *b); },
      [&] { return ctx.UnsupportedDtype(0); });
}

struct GemmParams {
  GemmShape shape;
  float alpha = 1, beta = 1;
};

Result<GemmParams> PlanGemm(const KernelContext& ctx, const runtime::Tensor& a, const runtime::Tensor& b,
                            const runtime::Tensor* c) {
  GemmParams p;
  VIGIL_ASSIGN_OR_RETURN(int64_t trans_a, ops::IntAttr(ctx.node(), "transA", 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t trans_b, ops::IntAttr(ctx.node(), "transB", 0));
  VIGIL_ASSIGN_OR_RETURN(p.alpha, ops::FloatAttr(ctx.node(), "alpha", 1.0f));
  VIGIL_ASSIGN_OR_RETURN(p.beta, ops::FloatAttr(ctx.node(), "beta", 1.0f));
  if (a.rank() != 2 || b.rank() != 2) {
    return ctx.Fail("A {} and B {} must both be matrices (rank 2)", ShapeString(a.shape()), ShapeString(b.shape()));
  }
  p.shape.trans_a = trans_a != 0;
  p.shape.trans_b = trans_b != 0;
  p.shape.m = a.dim(p.shape.trans_a ? 1 : 0);
  p.shape.k = a.dim(p.shape.trans_a ? 0 : 1);
  p.shape.n = b.dim(p.shape.trans_b ? 0 : 1);
  const int64_t b_k = b.dim(p.shape.trans_b ? 1 : 0);
  if (b_k != p.shape.k) {
    return ctx.Fail("inner dims differ: A {} (transA={}) has K={}, B {} (transB={}) has K={}", ShapeString(a.shape()),
                    trans_a, p.shape.k, ShapeString(b.shape()), trans_b, b_k);
  }
  if (c) {
    // Before opset 7, C broadcasts only with broadcast=1.
    VIGIL_ASSIGN_OR_RETURN(int64_t broadcast, ops::IntAttr(ctx.node(), "broadcast", ctx.opset() < 7 ? 0 : 1));
    std::vector<int64_t> out = {p.shape.m, p.shape.n};
    auto bc = BroadcastShape(c->shape(), out);
    if (c->rank() > 2 || !bc || *bc != out || (!broadcast && c->shape() != out)) {
      return ctx.Fail("C {} does not {} the output [{},{}]", ShapeString(c->shape()),
                      broadcast ? "broadcast to" : "match (broadcast=0)", p.shape.m, p.shape.n);
    }
  }
  return p;
}

// y[M,N] = beta * C broadcast to [M,N] (C has rank <= 2, checked).
template <DataType D>
void FillWithBias(const runtime::Tensor& c, LinalgCompute<D> beta, LinalgCompute<D>* y, int64_t m, int64_t n) {
  using C = LinalgCompute<D>;
  std::vector<C> scratch;
  const C* c_data = LoadLinalg<D>(c, scratch);
  const int64_t c_rows = c.rank() == 2 ? c.dim(0) : 1;
  const int64_t c_cols = c.rank() >= 1 ? c.dim(c.rank() - 1) : 1;
  for (int64_t i = 0; i < m; ++i) {
    const C* row = c_data + (c_rows == 1 ? 0 : i) * c_cols;
    for (int64_t j = 0; j < n; ++j) y[i * n + j] = beta * row[c_cols == 1 ? 0 : j];
  }
}

// Integer Gemm: the product wraps in the element type like numpy's integer
// dot; a non-integral alpha or beta scales in double (numpy multiplies the
// integer product by a float scalar) and truncates.
template <DataType D>
void FinishIntegerGemm(const GemmParams& p, const runtime::Tensor* c, int64_t* y) {
  const int64_t m = p.shape.m, n = p.shape.n;
  std::vector<int64_t> bias;
  if (c) {
    bias.resize(m * n);
    FillWithBias<D>(*c, 1, bias.data(), m, n);
  }
  const bool exact = p.alpha == 1.0f && (bias.empty() || p.beta == 1.0f);
  for (int64_t i = 0; i < m * n; ++i) {
    if (exact) {
      if (!bias.empty()) y[i] = static_cast<int64_t>(static_cast<uint64_t>(y[i]) + static_cast<uint64_t>(bias[i]));
    } else {
      double v = static_cast<double>(p.alpha) * static_cast<double>(y[i]);
      if (!bias.empty()) v += static_cast<double>(p.beta) * static_cast<double>(bias[i]);
      y[i] = ConvertValue<int64_t>(v);
    }
  }
}

template <DataType D>
Status RunGemm(KernelContext& ctx, const runtime::Tensor& a, const runtime::Tensor& b, const runtime::Tensor* c) {
  VIGIL_ASSIGN_OR_RETURN(GemmParams p, PlanGemm(ctx, a, b, c));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, a.dtype(), {p.shape.m, p.shape.n}));
  if (y->element_count() == 0) return Status::Ok();
  using C = LinalgCompute<D>;
  std::vector<C> a_scratch, b_scratch, y_scratch;
  const C* a_data = LoadLinalg<D>(a, a_scratch);
  const C* b_data = LoadLinalg<D>(b, b_scratch);
  C* y_data = LinalgResultBuffer<D>(*y, y_scratch);
  if constexpr (std::is_integral_v<C>) {
    GemmRowMajor(p.shape, a_data, b_data, y_data, C(1), false);
    FinishIntegerGemm<D>(p, c, y_data);
  } else {
    // beta * C first, then the product accumulates onto it.
    const bool with_bias = c != nullptr && p.beta != 0.0f;
    if (with_bias) FillWithBias<D>(*c, static_cast<C>(p.beta), y_data, p.shape.m, p.shape.n);
    GemmRowMajor(p.shape, a_data, b_data, y_data, static_cast<C>(p.alpha), with_bias);
  }
  StoreLinalg<D>(y_data, *y);
  return Status::Ok();
}

Status GemmKernel(KernelContext& ctx) {
  const runtime::Tensor* a = ctx.input(0);
  const runtime::Tensor* b = ctx.input(1);
  const runtime::Tensor* c = ctx.input(2);
  if (!a || !b) return ctx.Fail("Gemm needs inputs A and B");
  for (const runtime::Tensor* t : {b, c}) {
    if (t && t->dtype() != a->dtype()) {
      return ctx.Fail("input dtypes differ: A is {}, {} is {}", ir::DataTypeName(a->dtype()), t == b ? "B" : "C",
                      ir::DataTypeName(t->dtype()));
    }
  }
  return DispatchDtype<kLinalgTypes>(
      a->dtype(), [&](auto tag) { return RunGemm<decltype(tag)::value>(ctx, *a, *b, c); },
      [&] { return ctx.UnsupportedDtype(0); });
}

// The determinant of the m x m row-major matrix `a` (overwritten): Gaussian
// elimination with partial pivoting; the product of the pivots, negated once
// per row swap.
double Determinant(double* a, int64_t m) {
  double det = 1;
  for (int64_t k = 0; k < m; ++k) {
    int64_t pivot = k;
    for (int64_t r = k + 1; r < m; ++r) {
      if (std::fabs(a[r * m + k]) > std::fabs(a[pivot * m + k])) pivot = r;
    }
    if (a[pivot * m + k] == 0) return 0;  // singular (NaNs never compare greater, and stay in the product)
    if (pivot != k) {
      for (int64_t c = 0; c < m; ++c) std::swap(a[k * m + c], a[pivot * m + c]);
      det = -det;
    }
    const double p = a[k * m + k];
    det *= p;
    for (int64_t r = k + 1; r < m; ++r) {
      const double f = a[r * m + k] / p;
      if (f == 0) continue;
      for (int64_t c = k + 1; c < m; ++c) a[r * m + c] -= f * a[k * m + c];
    }
  }
  return det;
}

Status DetKernel(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const runtime::Tensor& x = *ctx.input(0);
  if (x.rank() < 2 || x.dim(x.rank() - 1) != x.dim(x.rank() - 2)) {
    return ctx.Fail("input X is {}, expected [*, M, M] (square matrices)", x.Describe());
  }
  const int64_t m = x.dim(x.rank() - 1);
  std::vector<int64_t> out_shape(x.shape().begin(), x.shape().end() - 2);
  int64_t count = 1;
  for (int64_t d : out_shape) count *= d;
  return DispatchFloat(ctx, 0, [&]<DataType D>() -> Status {
    using C = ElementCodec<D>;
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), out_shape));
    const auto* xs = x.data<typename C::Storage>();
    auto* ys = y->data<typename C::Storage>();
    std::vector<double> a;
    VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, a, static_cast<size_t>(m * m)));
    for (int64_t b = 0; b < count; ++b) {
      for (int64_t i = 0; i < m * m; ++i) a[static_cast<size_t>(i)] = static_cast<double>(C::Load(xs[b * m * m + i]));
      ys[b] = C::Store(static_cast<typename C::Compute>(Determinant(a.data(), m)));
    }
    return Status::Ok();
  });
}

const KernelDef kLinalgKernels[] = {
    {"", "Gemm", 1, kLatest, GemmKernel},
    {"", "MatMul", 1, kLatest, MatMulKernel},
    {"", "Einsum", 12, kLatest, EinsumKernel},
    {"", "Det", 11, kLatest, DetKernel},
};

}  // namespace

std::span<const KernelDef> LinalgKernels() { return kLinalgKernels; }

}  // namespace vigil::cpu
