#include "backends/cpu/kernel_type_constraints.h"

#include <map>
#include <tuple>

#include "ir/fuse_attention.h"
#include "ir/fuse_gelu.h"
#include "ir/fuse_hardswish.h"
#include "ir/fuse_silu.h"
#include "ir/fuse_matmul_bias.h"
#include "ir/layout_nhwc.h"

namespace vigil::cpu {
namespace {

using D = DataType;

// Input masks: In(0, 2) binds inputs 0 and 2.
template <typename... I>
constexpr uint32_t In(I... i) {
  return ((uint32_t{1} << i) | ...);
}
constexpr bool kAndLater = true;
constexpr const char kMs[] = "com.microsoft";

// The dtype sets the kernels' dispatches use (element_types.h,
// element_codec.h, shape_ops_common.h), named once.
constexpr TypeMask kFloats = kFloatTypes;                   // DispatchFloat
constexpr TypeMask kNumeric = kNumericTypes;                // DispatchDtype<kNumericTypes>
constexpr TypeMask kNumericBool = kAllTypes;                // numeric and bool (VisitNumeric with bool)
constexpr TypeMask kBytes = kByteSizedDtypes;               // MovableElementBytes
constexpr TypeMask kAny = kAnyDtype;                        // views and kernels that never read the data
constexpr TypeMask kIndex = Bit(D::kInt32) | Bit(D::kInt64);  // ReadInts
constexpr TypeMask kInt64 = Bit(D::kInt64);
constexpr TypeMask kBool = kBoolType;
constexpr TypeMask kFloat32 = Bit(D::kFloat32);
constexpr TypeMask kInt8Pair = Bit(D::kInt8) | Bit(D::kUint8);
constexpr TypeMask kHalfAndFloat = Bit(D::kFloat32) | Bit(D::kFloat16) | Bit(D::kBfloat16);
constexpr TypeMask kFloatsAndBytes = kFloats | kInt8Pair;  // DispatchFloatOrByte
constexpr TypeMask kQuantized = kInt8Pair | Bit(D::kUint16) | Bit(D::kInt16);
constexpr TypeMask kMlNumeric = Bit(D::kFloat32) | Bit(D::kFloat64) | Bit(D::kInt32) | Bit(D::kInt64);

// The reductions' two kernels each: axes an attribute, then an input.
#define VIGIL_REDUCE_(name, since, mask)                                              \
  {"", name, 1, (since) - 1, {{"T", In(0), mask}}},                                    \
  {                                                                                    \
    "", name, since, kLatest, { {"T", In(0), mask}, {"tensor(int64)", In(1), kInt64} } \
  }

const KernelTypeConstraints kDeclarations[] = {
    // --- elementwise_unary.cpp: MapUnary<mask> on input 0 ---
    {"", "Abs", 6, kLatest, {{"T", In(0), kNumeric}}},
    {"", "Neg", 6, kLatest, {{"T", In(0), kSignedTypes}}},
    {"", "Sign", 9, kLatest, {{"T", In(0), kNumeric}}},
    {"", "Reciprocal", 6, kLatest, {{"T", In(0), kFloats}}},
    {"", "Floor", 6, kLatest, {{"T", In(0), kFloats}}},
    {"", "Ceil", 6, kLatest, {{"T", In(0), kFloats}}},
    {"", "Round", 11, kLatest, {{"T", In(0), kFloats}}},
    {"", "Sqrt", 6, kLatest, {{"T", In(0), kFloats}}},
    {"", "Exp", 6, kLatest, {{"T", In(0), kFloats}}},
    {"", "Log", 6, kLatest, {{"T", In(0), kFloats}}},
    {"", "Sin", 7, kLatest, {{"T", In(0), kFloats}}},
    {"", "Cos", 7, kLatest, {{"T", In(0), kFloats}}},
    {"", "Tan", 7, kLatest, {{"T", In(0), kFloats}}},
    {"", "Asin", 7, kLatest, {{"T", In(0), kFloats}}},
    {"", "Acos", 7, kLatest, {{"T", In(0), kFloats}}},
    {"", "Atan", 7, kLatest, {{"T", In(0), kFloats}}},
    {"", "Sinh", 9, kLatest, {{"T", In(0), kFloats}}},
    {"", "Cosh", 9, kLatest, {{"T", In(0), kFloats}}},
    {"", "Asinh", 9, kLatest, {{"T", In(0), kFloats}}},
    {"", "Acosh", 9, kLatest, {{"T", In(0), kFloats}}},
    {"", "Atanh", 9, kLatest, {{"T", In(0), kFloats}}},
    {"", "Erf", 9, kLatest, {{"T", In(0), kNumeric}}},
    {"", "IsNaN", 9, kLatest, {{"T1", In(0), kFloats}}},
    {"", "IsInf", 10, kLatest, {{"T1", In(0), kFloats}}},
    {"", "Not", 1, kLatest, {{"T", In(0), kBool}}},
    {"", "BitwiseNot", 18, kLatest, {{"T", In(0), kIntTypes}}},

    // --- elementwise_activation.cpp ---
    {"", "Relu", 6, kLatest, {{"T", In(0), kSignedTypes}}},
    {"", "LeakyRelu", 6, kLatest, {{"T", In(0), kFloats}}},
    {"", "ThresholdedRelu", 10, kLatest, {{"T", In(0), kFloats}}},
    {"", "Elu", 6, kLatest, {{"T", In(0), kFloats}}},
    {"", "Selu", 6, kLatest, {{"T", In(0), kFloats}}},
    {"", "Celu", 12, kLatest, {{"T", In(0), kFloats}}},
    {"", "Sigmoid", 6, kLatest, {{"T", In(0), kFloats}}},
    {"", "HardSigmoid", 6, kLatest, {{"T", In(0), kFloats}}},
    {"", "HardSwish", 14, kLatest, {{"T", In(0), kFloats}}},
    {"", "Swish", 24, kLatest, {{"T", In(0), kFloats}}},
    {"", "Softplus", 1, kLatest, {{"T", In(0), kFloats}}},
    {"", "Softsign", 1, kLatest, {{"T", In(0), kFloats}}},
    {"", "Tanh", 6, kLatest, {{"T", In(0), kFloats}}},
    {"", "Mish", 18, kLatest, {{"T", In(0), kFloats}}},
    {"", "Gelu", 20, kLatest, {{"T", In(0), kFloats}}},
    {"", "Shrink", 9, kLatest, {{"T", In(0), kNumeric}}},
    {"", "SwiGLU", 28, kLatest, {{"T", In(0, 1), kFloats}}},
    {"", "Clip", 6, 10, {{"T", In(0), kFloats}}},
    {"", "Clip", 11, kLatest, {{"T", In(0, 1, 2), kNumeric}}},
    {"", "Identity", 1, kLatest, {{"V", In(0), kAny}}},

    // --- elementwise_binary.cpp: BinaryKernel<mask> on inputs 0 and 1 ---
    {"", "Add", 6, kLatest, {{"T", In(0, 1), kNumeric}}},
    {"", "Sub", 6, kLatest, {{"T", In(0, 1), kNumeric}}},
    {"", "Mul", 6, kLatest, {{"T", In(0, 1), kNumeric}}},
    {"", "Div", 6, kLatest, {{"T", In(0, 1), kNumeric}}},
    {"", "Mod", 10, kLatest, {{"T", In(0, 1), kNumeric}}},
    {"", "Pow", 1, kLatest, {{"T", In(0), kNumeric}, {"T1", In(1), kNumeric}}},
    {"", "BitShift", 11, kLatest, {{"T", In(0, 1), kIntTypes}}},
    {"", "BitwiseAnd", 18, kLatest, {{"T", In(0, 1), kIntTypes}}},
    {"", "BitwiseOr", 18, kLatest, {{"T", In(0, 1), kIntTypes}}},
    {"", "BitwiseXor", 18, kLatest, {{"T", In(0, 1), kIntTypes}}},
    {"", "And", 1, kLatest, {{"T", In(0, 1), kBool}}},
    {"", "Or", 1, kLatest, {{"T", In(0, 1), kBool}}},
    {"", "Xor", 1, kLatest, {{"T", In(0, 1), kBool}}},
    {"", "Equal", 1, kLatest, {{"T", In(0, 1), kNumericBool}}},
    {"", "Less", 1, kLatest, {{"T", In(0, 1), kNumericBool}}},
    {"", "LessOrEqual", 12, kLatest, {{"T", In(0, 1), kNumericBool}}},
    {"", "Greater", 1, kLatest, {{"T", In(0, 1), kNumericBool}}},
    {"", "GreaterOrEqual", 12, kLatest, {{"T", In(0, 1), kNumericBool}}},

    // --- elementwise_cast.cpp ---
    {"", "Cast", 6, kLatest, {{"T1", In(0), kNumericBool}}},
    {"", "CastLike", 15, kLatest, {{"T1", In(0), kNumericBool}, {"T2", In(1), kNumericBool}}},
    {"", "BitCast", 26, kLatest, {{"T1", In(0), kFixedSizeDtypes}}},

    // --- elementwise_nary.cpp: VariadicKernel<mask> over every input ---
    {"", "Max", 6, kLatest, {{"T", In(0), kNumeric, kAndLater}}},
    {"", "Min", 6, kLatest, {{"T", In(0), kNumeric, kAndLater}}},
    {"", "Sum", 6, kLatest, {{"T", In(0), kNumeric, kAndLater}}},
    {"", "Mean", 6, kLatest, {{"T", In(0), kFloats, kAndLater}}},
    {"", "Where", 9, kLatest, {{"T", In(1, 2), kNumericBool}, {"B", In(0), kBool}}},
    {"", "PRelu", 6, kLatest, {{"T", In(0, 1), kNumeric}}},

    // --- conv_pool.cpp and the files it lists: DispatchFloat on X, the
    // other float inputs checked equal to X ---
    {"", "Conv", 1, kLatest, {{"T", In(0, 1, 2), kFloats}}},
    {"", "ConvTranspose", 1, kLatest, {{"T", In(0, 1, 2), kFloats}}},
    {"", "DeformConv", 19, kLatest, {{"T", In(0, 1, 2, 3, 4), kFloats}}},
    {"", "CausalConvWithState", 27, kLatest, {{"T", In(0, 1, 2, 3), kFloats}}},
    {"", "MaxPool", 1, kLatest, {{"T", In(0), kFloatsAndBytes}}},
    {"", "AveragePool", 1, kLatest, {{"T", In(0), kFloats}}},
    {"", "LpPool", 1, kLatest, {{"T", In(0), kFloats}}},
    {"", "GlobalAveragePool", 1, kLatest, {{"T", In(0), kFloats}}},
    {"", "GlobalMaxPool", 1, kLatest, {{"T", In(0), kFloats}}},
    {"", "GlobalLpPool", 1, kLatest, {{"T", In(0), kFloats}}},
    {"", "MaxUnpool", 9, kLatest, {{"T1", In(0), kFloats}, {"T2", In(1, 2), kInt64}}},
    {ir::kVigilDomain, "ConvNhwc", 1, kLatest, {{"T", In(0, 1, 2, 3), kFloats}}},
    {ir::kVigilDomain, "FusedConv", 1, kLatest, {{"T", In(0, 1, 2, 3), kFloats}}},
    {ir::kVigilDomain, "QConv", 1, kLatest, {{"T", In(0, 1), Bit(D::kInt8)}, {"S", In(2, 3), Bit(D::kFloat32)}}},
    {ir::kVigilDomain, "QConvNhwc", 1, kLatest, {{"T", In(0, 1), Bit(D::kInt8)}, {"S", In(2, 3), Bit(D::kFloat32)}}},
    {ir::kVigilDomain, "QAdd", 1, kLatest, {{"T", In(0, 2), Bit(D::kInt8)}, {"S", In(1, 3, 4), Bit(D::kFloat32)}}},
    {ir::kVigilDomain, "QMatMul", 1, kLatest, {{"T", In(0, 1), Bit(D::kInt8)}, {"S", In(2, 3), Bit(D::kFloat32)}}},
    {ir::kVigilDomain, "MaxPoolNhwc", 1, kLatest, {{"T", In(0), kFloatsAndBytes}}},
    {ir::kVigilDomain, "AveragePoolNhwc", 1, kLatest, {{"T", In(0), kFloats}}},
    {ir::kVigilDomain, "GlobalAveragePoolNhwc", 1, kLatest, {{"T", In(0), kFloats}}},

    // --- normalization.cpp, layer_group_norm.cpp, softmax.cpp: X through
    // DispatchFloat, the parameters through ReadParamAsDoubles (any float
    // dtype, not necessarily X's) ---
    {"", "BatchNormalization", 1, kLatest, {{"T", In(0), kFloats}, {"U", In(1, 2, 3, 4), kFloats}}},
    {"", "InstanceNormalization", 1, kLatest, {{"T", In(0), kFloats}, {"U", In(1, 2), kFloats}}},
    {"", "LayerNormalization", 17, kLatest, {{"T", In(0), kFloats}, {"U", In(1, 2), kFloats}}},
    {"", "RMSNormalization", 23, kLatest, {{"T", In(0), kFloats}, {"V", In(1), kFloats}}},
    {"", "GroupNormalization", 18, kLatest, {{"T", In(0), kFloats}, {"U", In(1, 2), kFloats}}},
    {"", "LRN", 1, kLatest, {{"T", In(0), kFloats}}},
    {"", "MeanVarianceNormalization", 9, kLatest, {{"T", In(0), kFloats}}},
    {"", "Softmax", 1, 12, {{"T", In(0), kFloats}}},
    {"", "Softmax", 13, kLatest, {{"T", In(0), kFloats}}},
    {"", "LogSoftmax", 1, 12, {{"T", In(0), kFloats}}},
    {"", "LogSoftmax", 13, kLatest, {{"T", In(0), kFloats}}},
    {"", "Hardmax", 1, 12, {{"T", In(0), kFloats}}},
    {"", "Hardmax", 13, kLatest, {{"T", In(0), kFloats}}},
    {"", "LpNormalization", 1, kLatest, {{"T", In(0), kFloats}}},

    // --- attention.cpp, rotary_embedding.cpp, linear_attention.cpp ---
    {"",
     "Attention",
     23,
     kLatest,
     {{"T1", In(0, 1, 4), kFloats},
      {"T2", In(2, 5), kFloats},
      {"U", In(3), kFloats | kBool},
      {"nonpad_kv_seqlen", In(6), kInt64}}},
    {"", "RotaryEmbedding", 23, kLatest, {{"T", In(0, 1, 2), kHalfAndFloat}, {"M", In(3), kInt64}}},
    {"", "LinearAttention", 27, kLatest, {{"T", In(0, 1, 2, 3, 4, 5), kFloats}}},

    // --- linalg.cpp, einsum.cpp: kLinalgTypes (every numeric type) ---
    {"", "Gemm", 1, kLatest, {{"T", In(0, 1, 2), kNumeric}}},
    {"", "MatMul", 1, kLatest, {{"T", In(0, 1), kNumeric}}},
    {"", "Einsum", 12, kLatest, {{"T", In(0), kNumeric, kAndLater}}},
    {"", "Det", 11, kLatest, {{"T", In(0), kFloats}}},

    // --- reduction.cpp: Max/Min take bool too; LogSum(Exp) only floats;
    // the axes input is int64 ---
    VIGIL_REDUCE_("ReduceSum", 13, kNumeric),
    VIGIL_REDUCE_("ReduceMean", 18, kNumeric),
    VIGIL_REDUCE_("ReduceMax", 18, kNumericBool),
    VIGIL_REDUCE_("ReduceMin", 18, kNumericBool),
    VIGIL_REDUCE_("ReduceProd", 18, kNumeric),
    VIGIL_REDUCE_("ReduceL1", 18, kNumeric),
    VIGIL_REDUCE_("ReduceL2", 18, kNumeric),
    VIGIL_REDUCE_("ReduceLogSum", 18, kFloats),
    VIGIL_REDUCE_("ReduceLogSumExp", 18, kFloats),
    VIGIL_REDUCE_("ReduceSumSquare", 18, kNumeric),

    // --- reduction_axis.cpp ---
    {"", "ArgMax", 1, kLatest, {{"T", In(0), kNumeric}}},
    {"", "ArgMin", 1, kLatest, {{"T", In(0), kNumeric}}},
    {"", "CumSum", 11, kLatest, {{"T", In(0), kNumeric}, {"T2", In(1), kIndex}}},
    {"", "CumProd", 26, kLatest, {{"T", In(0), kNumeric}, {"T2", In(1), kIndex}}},
    {"", "TopK", 1, kLatest, {{"T", In(0), kNumeric}, {"K", In(1), kIndex}}},

    // --- shape_ops_layout.cpp: views (any dtype) and byte copies ---
    {"", "Reshape", 1, kLatest, {{"T", In(0), kAny}, {"shape", In(1), kIndex}}},
    {"", "Flatten", 1, kLatest, {{"T", In(0), kAny}}},
    {"", "Squeeze", 1, kLatest, {{"T", In(0), kAny}, {"axes", In(1), kIndex}}},
    {"", "Unsqueeze", 1, kLatest, {{"T", In(0), kAny}, {"axes", In(1), kIndex}}},
    {"", "Transpose", 1, kLatest, {{"T", In(0), kBytes}}},
    {"", "Concat", 1, kLatest, {{"T", In(0), kBytes, kAndLater}}},
    {"", "Split", 1, kLatest, {{"T", In(0), kBytes}, {"split", In(1), kIndex}}},
    {"", "Expand", 8, kLatest, {{"T", In(0), kBytes}, {"shape", In(1), kIndex}}},
    {"", "Tile", 6, kLatest, {{"T", In(0), kBytes}, {"T1", In(1), kIndex}}},

    // --- shape_ops_indexing.cpp ---
    {"", "Slice", 1, kLatest, {{"T", In(0), kBytes}, {"Tind", In(1, 2, 3, 4), kIndex}}},
    {"", "Gather", 1, kLatest, {{"T", In(0), kBytes}, {"Tind", In(1), kIndex}}},
    {"", "GatherElements", 11, kLatest, {{"T", In(0), kBytes}, {"Tind", In(1), kIndex}}},
    {"", "GatherND", 11, kLatest, {{"T", In(0), kBytes}, {"indices", In(1), kIndex}}},
    // Copies for reduction "none", VisitNumeric (numeric, bool) otherwise.
    {"", "ScatterND", 11, kLatest, {{"T", In(0, 2), kBytes}, {"indices", In(1), kIndex}}},
    {"", "ScatterElements", 11, kLatest, {{"T", In(0, 2), kBytes}, {"Tind", In(1), kIndex}}},
    {"", "Scatter", 9, 10, {{"T", In(0, 2), kBytes}, {"Tind", In(1), kIndex}}},
    {"", "TensorScatter", 24, kLatest, {{"T", In(0, 1), kBytes}, {"write_indices", In(2), kIndex}}},
    {"", "NonZero", 9, kLatest, {{"T", In(0), kNumericBool}}},
    {"", "OneHot", 9, kLatest, {{"T3", In(2), kBytes}, {"T1", In(0), kNumeric}, {"T2", In(1), kNumericBool}}},
    {"", "Trilu", 14, kLatest, {{"T", In(0), kBytes}, {"k", In(1), kIndex}}},

    // --- shape_ops_spatial.cpp, resize.cpp ---
    // Pad before opset 11 converts its value attribute (numeric, bool).
    {"", "Pad", 1, kLatest, {{"T", In(0, 2), kBytes}, {"pads", In(1, 3), kIndex}}},
    {"", "DepthToSpace", 1, kLatest, {{"T", In(0), kBytes}}},
    {"", "SpaceToDepth", 1, kLatest, {{"T", In(0), kBytes}}},
    {"", "Resize", 10, kLatest, {{"T1", In(0), kNumeric}, {"T2", In(1, 2), kNumericBool}, {"sizes", In(3), kIndex}}},
    {"", "Upsample", 7, 9, {{"T", In(0), kNumeric}, {"scales", In(1), kNumericBool}}},

    // --- tensor_gen.cpp ---
    {"", "Constant", 1, kLatest, {}},
    {"", "ConstantOfShape", 9, kLatest, {{"T1", In(0), kIndex}}},
    {"", "Range", 11, kLatest, {{"T", In(0, 1, 2), kFloats | Bit(D::kInt16) | Bit(D::kInt32) | kInt64}}},
    {"", "Shape", 1, kLatest, {{"T", In(0), kAny}}},
    {"", "Size", 1, kLatest, {{"T", In(0), kAny}}},
    {"", "EyeLike", 9, kLatest, {{"T1", In(0), kNumericBool}}},

    // --- recurrent.cpp: X and the weights of one float dtype ---
    {"", "RNN", 7, kLatest, {{"T", In(0, 1, 2, 3, 5), kFloats}, {"T1", In(4), kIndex}}},
    {"", "GRU", 7, kLatest, {{"T", In(0, 1, 2, 3, 5), kFloats}, {"T1", In(4), kIndex}}},
    {"", "LSTM", 7, kLatest, {{"T", In(0, 1, 2, 3, 5, 6, 7), kFloats}, {"T1", In(4), kIndex}}},

    // --- quantization.cpp ---
    {"",
     "QuantizeLinear",
     10,
     kLatest,
     {{"T1", In(0), kFloats | Bit(D::kInt32)}, {"T2", In(1), kFloats}, {"T3", In(2), kQuantized}}},
    {"",
     "DequantizeLinear",
     10,
     kLatest,
     {{"T1", In(0, 2), kQuantized | Bit(D::kInt32)}, {"T2", In(1), kFloats}}},
    {"", "DynamicQuantizeLinear", 11, kLatest, {{"T1", In(0), kFloat32}}},

    // --- quantized_linear.cpp: int8/uint8 data and zero points; float32
    // scales (QLinearMatMul 21 also takes float16 and bfloat16 ones) ---
    {"", "MatMulInteger", 10, kLatest, {{"T1", In(0, 2), kInt8Pair}, {"T2", In(1, 3), kInt8Pair}}},
    {"", "ConvInteger", 10, kLatest, {{"T1", In(0, 2), kInt8Pair}, {"T2", In(1, 3), kInt8Pair}}},
    {"",
     "QLinearMatMul",
     10,
     kLatest,
     {{"T1", In(0, 2), kInt8Pair},
      {"T2", In(3, 5), kInt8Pair},
      {"T3", In(7), kInt8Pair},
      {"TS", In(1, 4, 6), kHalfAndFloat}}},
    {"",
     "QLinearConv",
     10,
     kLatest,
     {{"T1", In(0, 2), kInt8Pair},
      {"T2", In(3, 5), kInt8Pair},
      {"T3", In(7), kInt8Pair},
      {"scales", In(1, 4, 6), kFloat32},
      {"T4", In(8), Bit(D::kInt32)}}},

    // --- quantized_contrib.cpp (com.microsoft) ---
    {kMs, "QLinearAdd", 1, kLatest, {{"T", In(0, 2, 3, 5, 7), kInt8Pair}, {"scales", In(1, 4, 6), kFloat32}}},
    {kMs, "QLinearMul", 1, kLatest, {{"T", In(0, 2, 3, 5, 7), kInt8Pair}, {"scales", In(1, 4, 6), kFloat32}}},
    {kMs, "QLinearSigmoid", 1, kLatest, {{"T", In(0, 2, 4), kInt8Pair}, {"scales", In(1, 3), kFloat32}}},
    {kMs, "QLinearLeakyRelu", 1, kLatest, {{"T", In(0, 2, 4), kInt8Pair}, {"scales", In(1, 3), kFloat32}}},
    {kMs, "QLinearGlobalAveragePool", 1, kLatest, {{"T", In(0, 2, 4), kInt8Pair}, {"scales", In(1, 3), kFloat32}}},
    {kMs, "QLinearAveragePool", 1, kLatest, {{"T", In(0, 2, 4), kInt8Pair}, {"scales", In(1, 3), kFloat32}}},
    // Then (X, X_scale, X_zero_point) triples, which the kernel checks.
    {kMs, "QLinearConcat", 1, kLatest, {{"T", In(1, 2), kInt8Pair}, {"scales", In(0), kFloat32}}},
    {kMs, "QLinearSoftmax", 1, kLatest, {{"T", In(0, 2, 4), kInt8Pair}, {"scales", In(1, 3), kFloat32}}},
    {kMs,
     "QGemm",
     1,
     kLatest,
     {{"TA", In(0, 2, 8), kInt8Pair},
      {"TB", In(3, 5), kInt8Pair},
      {"scales", In(1, 4, 7), kFloat32},
      {"TC", In(6), Bit(D::kInt32)}}},
    // --- dynamic_quantize_lstm.cpp (com.microsoft) ---
    {kMs,
     "DynamicQuantizeLSTM",
     1,
     kLatest,
     {{"T", In(0, 3, 5, 6, 7, 8, 10), kFloat32},
      {"T2", In(1, 2, 9, 11), kInt8Pair},
      {"T1", In(4), Bit(D::kInt32)}}},

    // --- dropout.cpp: X is handed on as a view ---
    {"", "Dropout", 7, kLatest, {{"T", In(0), kAny}, {"T1", In(1), kFloats}, {"T2", In(2), kBool}}},

    // --- loss.cpp ---
    {"", "NegativeLogLikelihoodLoss", 12, kLatest, {{"T", In(0, 2), kFloats}, {"Tind", In(1), kIndex}}},
    {"", "SoftmaxCrossEntropyLoss", 12, kLatest, {{"T", In(0, 2), kFloats}, {"Tind", In(1), kIndex}}},

    // --- vision.cpp, detection.cpp, grid_sample.cpp ---
    {"", "CenterCropPad", 18, kLatest, {{"T", In(0), kBytes}, {"Tind", In(1), kIndex}}},
    {"", "Col2Im", 18, kLatest, {{"T", In(0), kNumeric}, {"shape", In(1, 2), kIndex}}},
    {"", "AffineGrid", 20, kLatest, {{"T1", In(0), kFloats}, {"T2", In(1), kIndex}}},
    {"",
     "NonMaxSuppression",
     10,
     kLatest,
     {{"boxes", In(0, 1), kFloat32}, {"max_output", In(2), kIndex}, {"thresholds", In(3, 4), kFloats}}},
    {"", "RoiAlign", 10, kLatest, {{"T1", In(0, 1), kFloats}, {"T2", In(2), kIndex}}},
    {"", "GridSample", 16, kLatest, {{"T1", In(0), kFloats}, {"T2", In(1), kFloats}}},

    // --- selection.cpp ---
    {"", "Unique", 11, kLatest, {{"T", In(0), kNumericBool}}},
    {"", "Compress", 9, kLatest, {{"T", In(0), kBytes}, {"T1", In(1), kBool}}},
    {"", "ReverseSequence", 10, kLatest, {{"T", In(0), kBytes}, {"sequence_lens", In(1), kInt64}}},

    // --- text.cpp (no strings) ---
    {"", "TfIdfVectorizer", 9, kLatest, {{"T", In(0), kIndex}}},

    // --- classic_ml.cpp (ai.onnx.ml) ---
    {"ai.onnx.ml", "ArrayFeatureExtractor", 1, kLatest, {{"T", In(0), kMlNumeric}, {"Y", In(1), kInt64}}},
    {"ai.onnx.ml", "Binarizer", 1, kLatest, {{"T", In(0), kMlNumeric}}},
    {"ai.onnx.ml",
     "TreeEnsemble",
     5,
     kLatest,
     {{"T", In(0), Bit(D::kFloat32) | Bit(D::kFloat64) | Bit(D::kFloat16)}}},

    // --- signal.cpp ---
    {"", "DFT", 17, kLatest, {{"T1", In(0), kFloats}, {"T2", In(1, 2), kIndex}}},
    {"", "STFT", 17, kLatest, {{"T1", In(0, 2), kFloats}, {"T2", In(1, 3), kIndex}}},
    {"", "HannWindow", 17, kLatest, {{"T1", In(0), kIndex}}},
    {"", "HammingWindow", 17, kLatest, {{"T1", In(0), kIndex}}},
    {"", "BlackmanWindow", 17, kLatest, {{"T1", In(0), kIndex}}},
    {"", "MelWeightMatrix", 17, kLatest, {{"T1", In(0, 1, 2), kIndex}, {"T2", In(3, 4), kFloats}}},

    // --- fused_ops.cpp (ai.vigil): MatMulBias runs the MatMul and Add kernels ---
    {ir::kVigilDomain, ir::kMatMulBiasOp, 1, kLatest, {{"T", In(0, 1, 2, 3), kNumeric}}},
    {ir::kVigilDomain, ir::kGeluOp, 1, kLatest, {{"T", In(0), kFloats}}},
    {ir::kVigilDomain, ir::kSiluOp, 1, kLatest, {{"T", In(0), kFloats}}},
    {ir::kVigilDomain, ir::kHardSwishChainOp, 1, kLatest, {{"T", In(0), kFloats}}},
    {ir::kVigilDomain, ir::kAttentionOp, 1, kLatest, {{"T", In(0), kFloats}}},

    // --- fault_injection.cpp (ai.vigil.testing; kernels only with
    // VIGIL_ENABLE_TEST_OPS=1) ---
    {"ai.vigil.testing", "Crash", 1, kLatest, {{"T", In(0), kAny}}},
    {"ai.vigil.testing", "Fail", 1, kLatest, {{"T", In(0), kAny}}},
    {"ai.vigil.testing", "Diverge", 1, kLatest, {{"T", In(0), kAny}}},
    {"ai.vigil.testing", "OutOfBoundsWrite", 1, kLatest, {{"T", In(0), kAny}}},
    {"ai.vigil.testing", "Hang", 1, kLatest, {{"T", In(0), kAny}}},
    {"ai.vigil.testing", "Jitter", 1, kLatest, {{"T", In(0), kFloat32}}},

    // --- image_decoder.cpp: the encoded bytes ---
    {"", "ImageDecoder", 20, kLatest, {{"T1", In(0), Bit(D::kUint8)}}},
};

#undef VIGIL_REDUCE_

bool SameDomain(std::string_view a, std::string_view b) {
  auto is_default = [](std::string_view d) { return d.empty() || d == "ai.onnx"; };
  return a == b || (is_default(a) && is_default(b));
}

}  // namespace

size_t KernelTypeConstraints::variable_count() const {
  size_t n = 0;
  while (n < kMaxKernelTypeVariables && variables[n].name != nullptr) ++n;
  return n;
}

const KernelTypeVariable* KernelTypeConstraints::VariableOf(size_t input) const {
  const KernelTypeVariable* later = nullptr;  // a variadic variable whose inputs end before `input`
  for (size_t v = 0; v < variable_count(); ++v) {
    const KernelTypeVariable& var = variables[v];
    if (input < 32 && ((var.inputs >> input) & 1u) != 0) return &var;
    if (var.and_later && var.inputs != 0) {
      const size_t highest = 31 - static_cast<size_t>(__builtin_clz(var.inputs));
      if (input > highest) later = &var;
    }
  }
  return later;
}

std::span<const KernelTypeConstraints> AllKernelTypeConstraints() { return kDeclarations; }

const KernelTypeConstraints* FindKernelTypeConstraints(const KernelDef& def) {
  using Key = std::tuple<std::string_view, std::string_view, int, int>;
  static const std::map<Key, const KernelTypeConstraints*> kByKernel = [] {
    std::map<Key, const KernelTypeConstraints*> index;
    for (const KernelTypeConstraints& c : kDeclarations) {
      std::string_view domain = SameDomain(c.domain, "") ? std::string_view() : std::string_view(c.domain);
      index.emplace(Key{domain, c.op, c.since_version, c.until_version}, &c);
    }
    return index;
  }();
  std::string_view domain = SameDomain(def.domain, "") ? std::string_view() : std::string_view(def.domain);
  auto it = kByKernel.find(Key{domain, def.op, def.since_version, def.until_version});
  return it == kByKernel.end() ? nullptr : it->second;
}

const KernelTypeConstraints* FindKernelTypeConstraintsAt(std::string_view domain, std::string_view op,
                                                         int64_t opset) {
  for (const KernelTypeConstraints& c : kDeclarations) {
    if (op == c.op && SameDomain(domain, c.domain) && opset >= c.since_version && opset <= c.until_version) return &c;
  }
  return nullptr;
}

runtime::Float16Input TakesFloat16Input(const ir::Node& node, int64_t opset, size_t input) {
  using runtime::Float16Input;
  // The CPU kernels read these in any float type, but ONNX defines Resize's
  // and Upsample's scales as float32 (and another runtime may hold them to
  // it); Resize's roi goes with them.
  if (SameDomain(node.domain, "") && ((node.op_type == "Resize" && (input == 1 || input == 2)) ||
                                      (node.op_type == "Upsample" && input == 1))) {
    return Float16Input::kNo;
  }
  const KernelTypeConstraints* decl = FindKernelTypeConstraintsAt(node.domain, node.op_type, opset);
  const KernelTypeVariable* var = decl ? decl->VariableOf(input) : nullptr;
  constexpr TypeMask kBoth = Bit(DataType::kFloat32) | Bit(DataType::kFloat16);
  if (!var || (var->dtypes & kBoth) != kBoth) return Float16Input::kNo;
  // The first variable is the op's main one (Where's T, not its condition).
  return var == &decl->variables[0] ? Float16Input::kTied : Float16Input::kFree;
}

bool KernelTakesInputTypes(const KernelDef& def, const ir::Node& node, const runtime::NodeTypes& types,
                           std::string* why_not) {
  const KernelTypeConstraints* decl = FindKernelTypeConstraints(def);
  if (decl == nullptr) return true;  // undeclared: the kernel decides when it runs
  for (size_t i = 0; i < node.inputs.size() && i < types.inputs.size(); ++i) {
    const ir::TypeInfo* type = types.inputs[i];
    if (node.inputs[i].empty() || type == nullptr || type->kind != ir::TypeInfo::Kind::kTensor ||
        type->elem_type == DataType::kUndefined) {
      continue;  // omitted, or not known at load
    }
    const KernelTypeVariable* var = decl->VariableOf(i);
    if (var == nullptr || InMask(var->dtypes, type->elem_type)) continue;
    if (why_not) {
      *why_not = fmt::format("dtype {} of input {} is not among the CPU {} kernel's dtypes for {} ({})",
                             ir::DataTypeName(type->elem_type), i, def.op, var->name, DtypeNames(var->dtypes));
    }
    return false;
  }
  return true;
}

std::string DtypeNames(TypeMask mask) {
  std::string out;
  for (int d = 1; d < 64; ++d) {
    if ((mask >> d) & 1u) {
      if (!out.empty()) out += ", ";
      out += ir::DataTypeName(static_cast<DataType>(d));
    }
  }
  return out;
}

}  // namespace vigil::cpu
