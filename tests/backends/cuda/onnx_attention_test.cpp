// ONNX Attention (opsets 23, 24) and RotaryEmbedding (23) on the GPU
// (backends/cuda/onnx_attention.cu, rotary_embedding.cu) against the CPU
// kernels. Each node runs on the CUDA backend directly, with every output
// poisoned (NaN) first. Attention's Y and qk_matmul_output are compared with
// a float64 evaluation: the CPU kernel run on the inputs widened to float64;
// present_key / present_value must equal the CPU's bit for bit. Sizes are odd
// (13 query rows, head sizes 24 and 40, 3 query heads over 1 key/value head);
// every feature (3-D / 4-D, GQA, past and present, bool and float masks with
// broadcasting, causal with and without past, scale, softcap, the four
// qk_matmul_output modes, nonpad_kv_seqlen, fully masked rows, rows longer
// than shared memory holds) runs in float32, float16 and bfloat16.
// A failure names the case, the output, the error, and the first element
// off by more than the tolerance (index and both values).
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_test_util.h"

namespace vigil::cuda::testing {
namespace {

using cpu::testing::FloatAttr;
using cpu::testing::IntAttr;
using ir::DataType;

constexpr DataType kF32 = DataType::kFloat32;
constexpr DataType kF16 = DataType::kFloat16;
constexpr DataType kBF16 = DataType::kBfloat16;
constexpr DataType kF64 = DataType::kFloat64;
constexpr DataType kBool = DataType::kBool;

// Relative L2 error allowed against float64 (as attention_test.cpp).
double Tolerance(DataType t) { return t == kF16 ? 5e-3 : t == kBF16 ? 2e-2 : 1e-5; }

// `t` with its float elements widened to float64 (other dtypes as they are).
runtime::Tensor Widened(const runtime::Tensor& t) {
  if (t.dtype() != kF32 && t.dtype() != kF16 && t.dtype() != kBF16) return t;
  runtime::Tensor w = runtime::Tensor::Allocate(kF64, t.shape()).value();
  for (uint64_t i = 0; i < t.element_count(); ++i) w.data<double>()[i] = runtime::ElementAsDouble(t, i);
  return w;
}

// One node on a backend: `inputs` (null = omitted) on the host, or copied to
// the device first; outputs on the host (undefined where not wanted).
Result<std::vector<runtime::Tensor>> RunNode(const runtime::Backend& backend, const ir::Node& node, int64_t opset,
                                             const std::vector<const runtime::Tensor*>& inputs) {
  const bool device = backend.device() != runtime::Device::kHost;
  std::vector<runtime::Tensor> staged(inputs.size());
  std::vector<const runtime::Tensor*> args(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) continue;
    if (device) {
      VIGIL_ASSIGN_OR_RETURN(staged[i], backend.ToDevice(*inputs[i]));
      args[i] = &staged[i];
    } else {
      args[i] = inputs[i];
    }
  }
  std::vector<runtime::Tensor> outputs;
  cpu::testing::HeapAllocator host_allocator;
  PoisonedDeviceOutputs device_allocator(backend);
  runtime::OutputAllocator& allocator =
      device ? static_cast<runtime::OutputAllocator&>(device_allocator) : host_allocator;
  VIGIL_RETURN_IF_ERROR(backend.Run(node, opset, args, outputs, allocator));
  if (!device) return outputs;
  VIGIL_RETURN_IF_ERROR(backend.Synchronize());
  std::vector<runtime::Tensor> host(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].dtype() == DataType::kUndefined) continue;
    VIGIL_ASSIGN_OR_RETURN(host[i], backend.ToHost(outputs[i]));
  }
  return host;
}

// `got` against `want` (float64 or of got's dtype): same shape, NaN and inf
// in the same places, relative L2 error of the rest <= tol.
void ExpectClose(const std::string& what, const runtime::Tensor& got, const runtime::Tensor& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape()) << what << ": got " << got.Describe() << ", expected " << want.Describe();
  const uint64_t n = want.element_count();
  double err = 0, norm = 0, max_err = 0;
  uint64_t max_at = 0, special_mismatches = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const double w = runtime::ElementAsDouble(want, i), g = runtime::ElementAsDouble(got, i);
    if (!std::isfinite(w) || !std::isfinite(g)) {
      if (!(std::isnan(w) && std::isnan(g)) && w != g) ++special_mismatches;
      continue;
    }
    err += (g - w) * (g - w);
    norm += w * w;
    if (std::abs(g - w) > max_err) max_err = std::abs(g - w), max_at = i;
  }
  const double rms = n ? std::sqrt(norm / static_cast<double>(n)) : 0;
  const double rel = norm > 0 ? std::sqrt(err / norm) : std::sqrt(err);
  // The first element off by more than tol (relative to the larger of |want|
  // and the rms), or NaN / inf where the other is not.
  std::ostringstream first;
  for (uint64_t i = 0; i < n; ++i) {
    const double w = runtime::ElementAsDouble(want, i), g = runtime::ElementAsDouble(got, i);
    const bool special = !std::isfinite(w) || !std::isfinite(g);
    const bool bad = special ? !(std::isnan(w) && std::isnan(g)) && w != g
                             : std::abs(g - w) > tol * std::max(std::abs(w), rms);
    if (bad) {
      first << "first bad element " << i << ": got " << g << ", expected " << w;
      break;
    }
  }
  EXPECT_EQ(special_mismatches, 0u) << what << ": elements where only one side is NaN/inf (unwritten?); "
                                    << first.str();
  EXPECT_LE(rel, tol) << what << ": relative L2 error " << rel << ", max abs error " << max_err << " at " << max_at
                      << " (got " << runtime::ElementAsDouble(got, max_at) << ", expected "
                      << runtime::ElementAsDouble(want, max_at) << "); " << first.str();
}

void ExpectBitwiseEqual(const std::string& what, const runtime::Tensor& got, const runtime::Tensor& want) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what << ": got " << got.Describe() << ", expected " << want.Describe();
  const auto* g = static_cast<const uint8_t*>(got.raw_data());
  const auto* w = static_cast<const uint8_t*>(want.raw_data());
  for (size_t i = 0; i < want.byte_size(); ++i) {
    ASSERT_EQ(g[i], w[i]) << what << ": first differing byte " << i << " (element "
                          << i / (ir::DataTypeBits(want.dtype()) / 8) << ")";
  }
}

// --- Attention ------------------------------------------------------------------

enum class Mask { kNone, kBool, kFloat };

struct AttnCase {
  std::string name;
  int64_t opset = 23;
  bool rank3 = false;
  int64_t batch = 2, q_heads = 3, kv_heads = 1, q_seq = 13, kv_seq = 13, past = -1, head = 24, v_head = 24;
  bool causal = false;
  std::optional<float> scale;
  float softcap = 0;
  int qk_mode = -1;       // -1: output 3 not wanted
  bool present = false;   // outputs 1 and 2 wanted
  Mask mask = Mask::kNone;
  std::vector<int64_t> mask_shape;  // empty: [batch, q_heads, q_seq, total]
  bool masked_rows = false;         // a bool mask's row 0 and 5 of every head all False
  std::vector<int64_t> nonpad;      // opset 24's nonpad_kv_seqlen; empty: none
  int64_t softmax_precision = 0;    // 0: not set
  int64_t left_window = -1, right_window = -1;  // opset 25's window attributes; -1: not set

  int64_t total() const { return std::max<int64_t>(past, 0) + kv_seq; }
};

struct AttnInputs {
  std::vector<runtime::Tensor> t = std::vector<runtime::Tensor>(7);  // dtype undefined: omitted
  std::vector<const runtime::Tensor*> Pointers() const {
    std::vector<const runtime::Tensor*> p;
    for (const runtime::Tensor& x : t) p.push_back(x.dtype() == DataType::kUndefined ? nullptr : &x);
    while (!p.empty() && !p.back()) p.pop_back();
    return p;
  }
};

AttnInputs MakeInputs(const AttnCase& c, DataType dtype, uint32_t seed) {
  AttnInputs in;
  auto shape = [&](int64_t heads, int64_t seq, int64_t size) {
    return c.rank3 ? std::vector<int64_t>{c.batch, seq, heads * size} : std::vector<int64_t>{c.batch, heads, seq, size};
  };
  in.t[0] = RandomTensor(dtype, shape(c.q_heads, c.q_seq, c.head), seed, -2, 2);
  in.t[1] = RandomTensor(dtype, shape(c.kv_heads, c.kv_seq, c.head), seed + 1, -2, 2);
  in.t[2] = RandomTensor(dtype, shape(c.kv_heads, c.kv_seq, c.v_head), seed + 2);
  if (c.past >= 0) {
    in.t[4] = RandomTensor(dtype, {c.batch, c.kv_heads, c.past, c.head}, seed + 4, -2, 2);
    in.t[5] = RandomTensor(dtype, {c.batch, c.kv_heads, c.past, c.v_head}, seed + 5);
  }
  if (c.mask != Mask::kNone) {
    std::vector<int64_t> ms = c.mask_shape;
    if (ms.empty()) ms = {c.batch, c.q_heads, c.q_seq, c.total()};
    if (c.mask == Mask::kBool) {
      // About half the keys open.
      in.t[3] = RandomTensor(kBool, ms, seed + 3, -1, 3);
      if (c.masked_rows) {
        const int64_t keys = ms.back(), rows = static_cast<int64_t>(in.t[3].element_count()) / keys;
        const int64_t q_rows = ms.size() >= 2 ? ms[ms.size() - 2] : 1;
        for (int64_t r = 0; r < rows; ++r) {
          if (r % q_rows == 0 || r % q_rows == 5) std::memset(in.t[3].data<uint8_t>() + r * keys, 0, keys);
        }
      }
    } else {
      in.t[3] = RandomTensor(dtype, ms, seed + 3, -3, 1);
      // Some keys blocked outright.
      for (uint64_t i = 3; i < in.t[3].element_count(); i += 7) {
        if (dtype == kF32) in.t[3].data<float>()[i] = -std::numeric_limits<float>::infinity();
        else in.t[3].data<uint16_t>()[i] = dtype == kF16 ? 0xFC00 : 0xFF80;  // -inf
      }
    }
  }
  if (!c.nonpad.empty()) in.t[6] = cpu::testing::I64({c.batch}, c.nonpad);
  return in;
}

ir::Node AttnNode(const AttnCase& c, const AttnInputs& in) {
  static const char* const kIn[] = {"q", "k", "v", "mask", "past_key", "past_value", "nonpad"};
  std::vector<std::string> inputs;
  for (size_t i = 0; i < in.Pointers().size(); ++i) inputs.push_back(in.t[i].dtype() == DataType::kUndefined ? "" : kIn[i]);
  std::vector<std::string> outputs = {"y"};
  if (c.present || c.qk_mode >= 0) {
    outputs.push_back(c.present ? "present_key" : "");
    outputs.push_back(c.present ? "present_value" : "");
  }
  if (c.qk_mode >= 0) outputs.push_back("qk");
  std::vector<ir::Attribute> attrs;
  if (c.rank3) attrs = {IntAttr("q_num_heads", c.q_heads), IntAttr("kv_num_heads", c.kv_heads)};
  if (c.causal) attrs.push_back(IntAttr("is_causal", 1));
  if (c.scale) attrs.push_back(FloatAttr("scale", *c.scale));
  if (c.softcap > 0) attrs.push_back(FloatAttr("softcap", c.softcap));
  if (c.qk_mode >= 0) attrs.push_back(IntAttr("qk_matmul_output_mode", c.qk_mode));
  if (c.softmax_precision) attrs.push_back(IntAttr("softmax_precision", c.softmax_precision));
  if (c.left_window >= 0) attrs.push_back(IntAttr("left_window_size", c.left_window));
  if (c.right_window >= 0) attrs.push_back(IntAttr("right_window_size", c.right_window));
  return cpu::testing::MakeNode("Attention", inputs, outputs, attrs);
}

void CheckAttention(const AttnCase& c, DataType dtype) {
  const std::string name = c.name + " " + std::string(ir::DataTypeName(dtype));
  SCOPED_TRACE(name);
  const AttnInputs in = MakeInputs(c, dtype, static_cast<uint32_t>(c.name.size() * 7919 + c.q_seq));
  AttnInputs wide;
  for (size_t i = 0; i < in.t.size(); ++i) wide.t[i] = in.t[i].dtype() == DataType::kUndefined ? in.t[i] : Widened(in.t[i]);
  const ir::Node node = AttnNode(c, in);
  auto got = RunNode(*CudaBackendForTests(), node, c.opset, in.Pointers());
  ASSERT_TRUE(got.ok()) << name << ": " << got.status().ToString();
  auto want64 = RunNode(*cpu::MakeCpuBackend(), node, c.opset, wide.Pointers());
  ASSERT_TRUE(want64.ok()) << name << " (CPU, float64): " << want64.status().ToString();
  auto want = RunNode(*cpu::MakeCpuBackend(), node, c.opset, in.Pointers());
  ASSERT_TRUE(want.ok()) << name << " (CPU): " << want.status().ToString();
  ASSERT_EQ(got->size(), node.outputs.size());
  ASSERT_EQ(got->at(0).dtype(), dtype);
  ExpectClose(name + " Y", got->at(0), want64->at(0), Tolerance(dtype));
  if (c.present) {
    ExpectBitwiseEqual(name + " present_key", got->at(1), want->at(1));
    ExpectBitwiseEqual(name + " present_value", got->at(2), want->at(2));
  }
  if (c.qk_mode >= 0) {
    ASSERT_EQ(got->at(3).dtype(), dtype);
    ExpectClose(name + " qk_matmul_output (mode " + std::to_string(c.qk_mode) + ")", got->at(3), want64->at(3),
                Tolerance(dtype));
  }
}

std::vector<AttnCase> AttnCases() {
  std::vector<AttnCase> cases;
  auto add = [&](std::string name, auto&& edit) {
    AttnCase c;
    c.name = std::move(name);
    edit(c);
    cases.push_back(c);
  };
  add("4d gqa 3/1", [](AttnCase&) {});
  add("4d mha, kv longer than q, v head 40", [](AttnCase& c) { c.kv_heads = 3, c.kv_seq = 19, c.v_head = 40; });
  add("4d 4/2 heads, head 40 v 24, q 7", [](AttnCase& c) { c.q_heads = 4, c.kv_heads = 2, c.head = 40, c.v_head = 24, c.q_seq = 7; });
  add("3d gqa 3/1 head 40 v 24", [](AttnCase& c) { c.rank3 = true, c.head = 40, c.v_head = 24, c.kv_seq = 17; });
  add("3d 6/2 heads", [](AttnCase& c) { c.rank3 = true, c.q_heads = 6, c.kv_heads = 2; });
  add("heads over 128 elements", [](AttnCase& c) { c.head = 160, c.v_head = 136, c.q_seq = 5, c.kv_seq = 9; });
  add("head size 1", [](AttnCase& c) { c.head = 1, c.v_head = 3; });
  add("causal", [](AttnCase& c) { c.causal = true; });
  add("causal, q longer than kv", [](AttnCase& c) { c.causal = true, c.q_seq = 13, c.kv_seq = 6; });
  add("causal with past", [](AttnCase& c) { c.causal = true, c.past = 5, c.present = true; });
  add("3d past and present, decode", [](AttnCase& c) { c.rank3 = true, c.past = 7, c.q_seq = 1, c.kv_seq = 1, c.present = true; });
  add("4d past, v head 40, no causal", [](AttnCase& c) { c.past = 11, c.v_head = 40, c.present = true; });
  add("empty past", [](AttnCase& c) { c.past = 0, c.present = true, c.causal = true; });
  add("past, qk output without present", [](AttnCase& c) { c.past = 3, c.qk_mode = 0; });
  add("bool mask full", [](AttnCase& c) { c.mask = Mask::kBool; });
  add("bool mask with fully masked rows", [](AttnCase& c) { c.mask = Mask::kBool, c.masked_rows = true, c.qk_mode = 3; });
  add("bool mask [q, total] + causal + past", [](AttnCase& c) {
    c.mask = Mask::kBool, c.mask_shape = {13, 18}, c.causal = true, c.past = 5;
  });
  add("float mask full", [](AttnCase& c) { c.mask = Mask::kFloat; });
  add("float mask [b, 1, 1, total]", [](AttnCase& c) { c.mask = Mask::kFloat, c.mask_shape = {2, 1, 1, 13}; });
  add("float mask [heads, q, total]", [](AttnCase& c) { c.mask = Mask::kFloat, c.mask_shape = {3, 13, 13}; });
  add("float mask [total]", [](AttnCase& c) { c.mask = Mask::kFloat, c.mask_shape = {13}; });
  add("opset 23 mask keys broadcast [q, 1]", [](AttnCase& c) { c.mask = Mask::kFloat, c.mask_shape = {13, 1}; });
  add("opset 24 mask shorter than total", [](AttnCase& c) {
    c.opset = 24, c.mask = Mask::kBool, c.mask_shape = {2, 1, 13, 9}, c.qk_mode = 2;
  });
  add("opset 24 float mask keys 1 pads", [](AttnCase& c) { c.opset = 24, c.mask = Mask::kFloat, c.mask_shape = {1}; });
  // A mask of no keys masks nothing (as the CPU kernel takes it).
  add("opset 24 mask of 0 keys", [](AttnCase& c) { c.opset = 24, c.mask = Mask::kBool, c.mask_shape = {2, 1, 13, 0}; });
  add("scale", [](AttnCase& c) { c.scale = 0.3f; });
  add("softcap", [](AttnCase& c) { c.softcap = 2.5f, c.scale = 1.0f; });
  for (int mode = 0; mode <= 3; ++mode) {
    add("qk mode " + std::to_string(mode), [mode](AttnCase& c) {
      c.qk_mode = mode, c.softcap = 1.5f, c.scale = 0.8f, c.mask = Mask::kFloat, c.causal = true, c.past = 2,
      c.present = true;
    });
  }
  add("nonpad_kv_seqlen", [](AttnCase& c) { c.opset = 24, c.nonpad = {9, 13}; });
  add("nonpad_kv_seqlen causal, a batch of 0 keys", [](AttnCase& c) {
    c.opset = 24, c.nonpad = {0, 11}, c.causal = true, c.q_seq = 7, c.qk_mode = 3;
  });
  add("nonpad_kv_seqlen + mask, 3d", [](AttnCase& c) {
    c.opset = 24, c.rank3 = true, c.nonpad = {5, 12}, c.mask = Mask::kBool, c.mask_shape = {13, 13};
  });
  add("opset 24 with past", [](AttnCase& c) { c.opset = 24, c.past = 4, c.causal = true, c.present = true; });
  add("softmax_precision float64", [](AttnCase& c) { c.softmax_precision = 11; });
  add("opset 25 left window", [](AttnCase& c) { c.opset = 25, c.left_window = 3; });
  add("opset 25 window both sides, causal, past", [](AttnCase& c) {
    c.opset = 25, c.left_window = 2, c.right_window = 1, c.causal = true, c.past = 4, c.present = true, c.qk_mode = 2;
  });
  add("opset 25 right window 0, nonpad, 3d", [](AttnCase& c) {
    c.opset = 25, c.right_window = 0, c.nonpad = {6, 13}, c.rank3 = true, c.mask = Mask::kBool, c.mask_shape = {13, 13};
  });
  // Rows too long for shared memory: scores go to the workspace (float32
  // past 5120 keys, float16 / bfloat16 past 10240).
  add("long rows", [](AttnCase& c) {
    c.batch = 1, c.q_heads = 2, c.q_seq = 3, c.kv_seq = 10999, c.past = 2, c.mask = Mask::kBool,
    c.mask_shape = {11001};
  });
  // More rows (4800) than blocks (4096): blocks take several rows.
  add("many rows", [](AttnCase& c) { c.q_heads = 8, c.kv_heads = 2, c.q_seq = 300, c.kv_seq = 7, c.head = 8, c.v_head = 8; });
  return cases;
}

TEST(CudaOnnxAttention, Float32MatchesFloat64) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (const AttnCase& c : AttnCases()) CheckAttention(c, kF32);
}

TEST(CudaOnnxAttention, Float16MatchesFloat64) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (const AttnCase& c : AttnCases()) CheckAttention(c, kF16);
}

TEST(CudaOnnxAttention, Bfloat16MatchesFloat64) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (const AttnCase& c : AttnCases()) CheckAttention(c, kBF16);
}

// A nonpad_kv_seqlen outside [0, kv_seq] cannot be reported from the
// device: that batch's Y rows are NaN; the other batch is unaffected.
TEST(CudaOnnxAttention, OutOfRangeNonpadGivesNanRows) {
  VIGIL_SKIP_WITHOUT_CUDA();
  AttnCase c;
  c.name = "bad nonpad";
  c.opset = 24;
  c.nonpad = {9, 14};
  const AttnInputs in = MakeInputs(c, kF32, 3);
  auto got = RunNode(*CudaBackendForTests(), AttnNode(c, in), 24, in.Pointers());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  AttnInputs fixed = in;
  fixed.t[6] = cpu::testing::I64({2}, {9, 13});
  auto want = RunNode(*cpu::MakeCpuBackend(), AttnNode(c, fixed), 24, fixed.Pointers());
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  const runtime::Tensor& y = got->at(0);
  const uint64_t half = y.element_count() / 2;  // Y is [2, 3, 13, 24]
  for (uint64_t i = 0; i < y.element_count(); ++i) {
    const double g = runtime::ElementAsDouble(y, i);
    if (i >= half) {
      ASSERT_TRUE(std::isnan(g)) << "element " << i << " of batch 1 is " << g;
    } else {
      ASSERT_NEAR(g, runtime::ElementAsDouble(want->at(0), i), 1e-5) << "element " << i;
    }
  }
  // The CPU kernel refuses the same input.
  auto cpu = RunNode(*cpu::MakeCpuBackend(), AttnNode(c, in), 24, in.Pointers());
  ASSERT_FALSE(cpu.ok());
}

TEST(CudaOnnxAttention, ShapeErrorsNameTheInput) {
  VIGIL_SKIP_WITHOUT_CUDA();
  AttnCase c;
  c.name = "bad";
  AttnInputs in = MakeInputs(c, kF32, 5);
  in.t[1] = RandomTensor(kF32, {2, 1, 13, 23}, 6);  // K's head size differs from Q's
  auto got = RunNode(*CudaBackendForTests(), AttnNode(c, in), 23, in.Pointers());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), ErrorCode::kInvalidInput) << got.status().ToString();
  EXPECT_NE(got.status().ToString().find("head size"), std::string::npos) << got.status().ToString();

  c.opset = 24;
  c.nonpad = {1, 2};
  in = MakeInputs(c, kF32, 5);
  in.t[6] = cpu::testing::I64({3}, {1, 2, 3});  // one count per batch (2)
  got = RunNode(*CudaBackendForTests(), AttnNode(c, in), 24, in.Pointers());
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().ToString().find("nonpad_kv_seqlen"), std::string::npos) << got.status().ToString();
}

// Types the kernel does not take go to the CPU, with the reason.
TEST(CudaOnnxAttention, SupportRefusesWithAReason) {
  VIGIL_SKIP_WITHOUT_CUDA();
  auto why_not = [](std::vector<DataType> dtypes, int64_t opset = 23) {
    std::vector<ir::TypeInfo> infos;
    for (DataType t : dtypes) infos.push_back(ops::TensorType(t, {2, 3, 5, 8}));
    runtime::NodeTypes types;
    std::vector<std::string> names = {"q", "k", "v", "mask"};
    names.resize(dtypes.size());
    for (const ir::TypeInfo& t : infos) types.inputs.push_back(&t);
    const ir::Node node = cpu::testing::MakeNode("Attention", names, {"y"});
    std::string why;
    const bool ok = CudaBackendForTests()->SupportsTyped(node, opset, types, &why);
    return ok ? std::string("supported") : why;
  };
  EXPECT_EQ(why_not({kF16, kF16, kF16}), "supported");
  EXPECT_EQ(why_not({kBF16, kBF16, kBF16, kBool}), "supported");
  EXPECT_EQ(why_not({kF32, kF32, kF32, kF32}), "supported");
  EXPECT_EQ(why_not({kF64, kF64, kF64}), "dtype float64 of input 0 (Q)");
  EXPECT_NE(why_not({kF32, kF32, kF16}).find("input 2 (V)"), std::string::npos);
  EXPECT_NE(why_not({kF32, kF32, kF32, kF16}).find("attn_mask"), std::string::npos);
  EXPECT_EQ(why_not({kF32, kF32, kF32}, 25), "supported");
}

// Through a session with no fallback: the plan's shapes and the backend's
// input placement (nonpad_kv_seqlen on the device) agree with the kernel.
TEST(CudaOnnxAttention, RunsInASessionWithoutFallback) {
  VIGIL_SKIP_WITHOUT_CUDA();
  AttnCase c;
  c.name = "session";
  c.causal = true, c.past = 5, c.mask = Mask::kBool, c.mask_shape = {13, 18};
  AttnInputs in = MakeInputs(c, kF16, 21);
  NodeCase nc = MakeCase("Attention", {}, {IntAttr("is_causal", 1), IntAttr("qk_matmul_output_mode", 3)}, 23);
  for (size_t i = 0; i < 6; ++i) nc.inputs.push_back(in.t[i]);
  nc.outputs = 4;
  ExpectCudaMatchesCpu(nc, Tolerance(kF16));

  AttnCase p;
  p.name = "session opset 24";
  p.opset = 24, p.rank3 = true, p.nonpad = {7, 12}, p.causal = true;
  in = MakeInputs(p, kF32, 22);
  nc = MakeCase("Attention", {}, {IntAttr("q_num_heads", 3), IntAttr("kv_num_heads", 1), IntAttr("is_causal", 1)}, 24);
  for (size_t i = 0; i < 7; ++i) nc.inputs.push_back(in.t[i]);
  ExpectCudaMatchesCpu(nc, Tolerance(kF32));
}

// --- RotaryEmbedding --------------------------------------------------------------

struct RopeCase {
  std::string name;
  bool rank3 = false, interleaved = false, ids = true;
  int64_t batch = 2, heads = 3, seq = 13, head = 24, rotary_dim = 0, positions = 40;
};

struct RopeInputs {
  runtime::Tensor x, cos, sin, ids;
  std::vector<const runtime::Tensor*> Pointers() const {
    std::vector<const runtime::Tensor*> p = {&x, &cos, &sin};
    if (ids.dtype() != DataType::kUndefined) p.push_back(&ids);
    return p;
  }
};

RopeInputs MakeRope(const RopeCase& c, DataType dtype) {
  RopeInputs in;
  const int64_t half = (c.rotary_dim ? c.rotary_dim : c.head) / 2;
  in.x = RandomTensor(dtype, c.rank3 ? std::vector<int64_t>{c.batch, c.seq, c.heads * c.head}
                                     : std::vector<int64_t>{c.batch, c.heads, c.seq, c.head}, 11);
  const std::vector<int64_t> cache = c.ids ? std::vector<int64_t>{c.positions, half}
                                           : std::vector<int64_t>{c.batch, c.seq, half};
  in.cos = RandomTensor(dtype, cache, 12);
  in.sin = RandomTensor(dtype, cache, 13);
  if (c.ids) {
    std::vector<int64_t> ids(static_cast<size_t>(c.batch * c.seq));
    for (size_t t = 0; t < ids.size(); ++t) ids[t] = static_cast<int64_t>((t * 17 + 3) % c.positions);
    in.ids = cpu::testing::I64({c.batch, c.seq}, ids);
  }
  return in;
}

ir::Node RopeNode(const RopeCase& c) {
  std::vector<ir::Attribute> attrs = {IntAttr("interleaved", c.interleaved ? 1 : 0)};
  if (c.rank3) attrs.push_back(IntAttr("num_heads", c.heads));
  if (c.rotary_dim) attrs.push_back(IntAttr("rotary_embedding_dim", c.rotary_dim));
  std::vector<std::string> inputs = {"x", "cos", "sin"};
  if (c.ids) inputs.push_back("ids");
  return cpu::testing::MakeNode("RotaryEmbedding", inputs, {"y"}, attrs);
}

TEST(CudaRotaryEmbedding, MatchesCpu) {
  VIGIL_SKIP_WITHOUT_CUDA();
  std::vector<RopeCase> cases = {
      {"4d position_ids"},
      {"4d interleaved", false, true},
      {"4d rotary_dim 10 of 24", false, false, true, 2, 3, 13, 24, 10},
      {"4d interleaved rotary_dim 10", false, true, true, 2, 3, 13, 24, 10},
      {"3d num_heads 3, 3-D caches", true, false, false},
      {"3d interleaved, head 40 rotary 22", true, true, true, 3, 3, 7, 40, 22, 9},
      {"4d 3-D caches, head 2", false, false, false, 1, 5, 13, 2},
  };
  for (const RopeCase& c : cases) {
    for (DataType dtype : {kF32, kF16, kBF16}) {
      const std::string name = c.name + " " + std::string(ir::DataTypeName(dtype));
      SCOPED_TRACE(name);
      const RopeInputs in = MakeRope(c, dtype);
      auto got = RunNode(*CudaBackendForTests(), RopeNode(c), 23, in.Pointers());
      ASSERT_TRUE(got.ok()) << name << ": " << got.status().ToString();
      auto want = RunNode(*cpu::MakeCpuBackend(), RopeNode(c), 23, in.Pointers());
      ASSERT_TRUE(want.ok()) << name << " (CPU): " << want.status().ToString();
      ASSERT_EQ(got->at(0).dtype(), dtype);
      // Both round a double (float for float16 / bfloat16 on the GPU) result
      // once; the tolerance covers that and the float arithmetic.
      ExpectClose(name, got->at(0), want->at(0), Tolerance(dtype));
    }
  }
}

// A position outside the caches: that token's rotated elements are NaN, its
// others copied; every other token as the CPU computes it.
TEST(CudaRotaryEmbedding, OutOfRangePositionGivesNan) {
  VIGIL_SKIP_WITHOUT_CUDA();
  RopeCase c{"bad position", false, false, true, 2, 3, 13, 24, 10};
  RopeInputs in = MakeRope(c, kF32);
  const int64_t bad_token = 13 + 4;  // batch 1, position 4
  in.ids.data<int64_t>()[bad_token] = c.positions;
  auto got = RunNode(*CudaBackendForTests(), RopeNode(c), 23, in.Pointers());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  RopeInputs fixed = in;
  fixed.ids = cpu::testing::I64({2, 13}, cpu::testing::Values<int64_t>(in.ids));
  fixed.ids.data<int64_t>()[bad_token] = 0;
  auto want = RunNode(*cpu::MakeCpuBackend(), RopeNode(c), 23, fixed.Pointers());
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  const runtime::Tensor& y = got->at(0);  // [2, 3, 13, 24]
  for (uint64_t i = 0; i < y.element_count(); ++i) {
    const int64_t e = static_cast<int64_t>(i % 24), s = static_cast<int64_t>(i / 24 % 13);
    const int64_t b = static_cast<int64_t>(i / 24 / 13 / 3);
    const double g = runtime::ElementAsDouble(y, i);
    if (b * 13 + s == bad_token && e < 10) {
      ASSERT_TRUE(std::isnan(g)) << "element " << i << " is " << g;
    } else {
      ASSERT_NEAR(g, runtime::ElementAsDouble(want->at(0), i), 1e-6) << "element " << i;
    }
  }
  auto cpu = RunNode(*cpu::MakeCpuBackend(), RopeNode(c), 23, in.Pointers());
  ASSERT_FALSE(cpu.ok());  // the CPU kernel refuses it
}

TEST(CudaRotaryEmbedding, RunsInASessionWithoutFallback) {
  VIGIL_SKIP_WITHOUT_CUDA();
  RopeCase c{"session", true, true, true, 2, 3, 13, 24, 16};
  const RopeInputs in = MakeRope(c, kBF16);
  NodeCase nc = MakeCase("RotaryEmbedding", {in.x, in.cos, in.sin, in.ids},
                         {IntAttr("interleaved", 1), IntAttr("num_heads", 3), IntAttr("rotary_embedding_dim", 16)}, 23);
  ExpectCudaMatchesCpu(nc, Tolerance(kBF16));
}

TEST(CudaRotaryEmbedding, SupportRefusesOtherDtypes) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const ir::TypeInfo x = ops::TensorType(kF64, {1, 2, 3, 4}), cache = ops::TensorType(kF64, {3, 2});
  runtime::NodeTypes types;
  types.inputs = {&x, &cache, &cache};
  const ir::Node node = cpu::testing::MakeNode("RotaryEmbedding", {"x", "cos", "sin"}, {"y"});
  std::string why;
  EXPECT_FALSE(CudaBackendForTests()->SupportsTyped(node, 23, types, &why));
  EXPECT_EQ(why, "dtype float64 of input 0");
}

TEST(CudaRotaryEmbedding, ShapeErrorsNameTheInput) {
  VIGIL_SKIP_WITHOUT_CUDA();
  RopeCase c{"bad cache"};
  RopeInputs in = MakeRope(c, kF32);
  in.cos = RandomTensor(kF32, {40, 11}, 1);  // rotary_dim / 2 is 12
  in.sin = RandomTensor(kF32, {40, 11}, 2);
  auto got = RunNode(*CudaBackendForTests(), RopeNode(c), 23, in.Pointers());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), ErrorCode::kInvalidInput) << got.status().ToString();
  EXPECT_NE(got.status().ToString().find("cos_cache"), std::string::npos) << got.status().ToString();
}

}  // namespace
}  // namespace vigil::cuda::testing
