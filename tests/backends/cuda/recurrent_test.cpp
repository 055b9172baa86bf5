// RNN, GRU and LSTM on CUDA against the CPU reference: each direction, both
// layouts, per-batch sequence lengths (int32/int64, including 0), optional
// inputs present and omitted, clip, input_forget, peepholes, GRU
// linear_before_reset, non-default activations, subsets of the outputs.
#include <optional>

#include "cuda_test_util.h"

namespace vigil::cuda::testing {
namespace {

using cpu::testing::FloatAttr;
using cpu::testing::FloatsAttr;
using cpu::testing::IntAttr;
using cpu::testing::StringAttr;

constexpr ir::DataType kF32 = ir::DataType::kFloat32;
constexpr ir::DataType kF16 = ir::DataType::kFloat16;
constexpr ir::DataType kBF16 = ir::DataType::kBfloat16;

// float32: the activations (expf, tanhf) differ from the CPU's by an ulp or
// two, and the differences pass through every later time step.
double Tol(ir::DataType t) { return t == kF32 ? 1e-4 : 1e-2; }

struct Rec {
  std::string op = "LSTM";
  std::string direction = "forward";
  int64_t opset = 14;
  int64_t layout = 0;
  int64_t seq = 5, batch = 3, input = 13, hidden = 17;
  bool bias = true, h0 = false, c0 = false, peep = false;
  std::vector<int64_t> lens;  // empty: no sequence_lens
  bool lens64 = false;
  std::vector<std::string> acts;
  std::vector<float> alphas, betas;
  std::optional<float> clip;
  int64_t input_forget = 0, lbr = 0;
  size_t outputs = 0;  // 0: all of the op's outputs
};

void Check(const Rec& r, ir::DataType t, uint32_t seed = 1) {
  const int64_t nd = r.direction == "bidirectional" ? 2 : 1;
  const int64_t gates = r.op == "LSTM" ? 4 : r.op == "GRU" ? 3 : 1;
  const bool lstm = r.op == "LSTM";
  NodeCase c;
  c.op = r.op;
  c.opset = r.opset;
  c.attributes = {StringAttr("direction", r.direction), IntAttr("hidden_size", r.hidden)};
  if (r.opset >= 14) c.attributes.push_back(IntAttr("layout", r.layout));
  if (!r.acts.empty()) {
    ir::Attribute a;
    a.name = "activations";
    a.type = ir::AttributeType::kStrings;
    a.strings = r.acts;
    c.attributes.push_back(a);
  }
  if (!r.alphas.empty()) c.attributes.push_back(FloatsAttr("activation_alpha", r.alphas));
  if (!r.betas.empty()) c.attributes.push_back(FloatsAttr("activation_beta", r.betas));
  if (r.clip) c.attributes.push_back(FloatAttr("clip", *r.clip));
  if (lstm) c.attributes.push_back(IntAttr("input_forget", r.input_forget));
  if (r.op == "GRU") c.attributes.push_back(IntAttr("linear_before_reset", r.lbr));

  const int64_t layout = r.opset >= 14 ? r.layout : 0;
  std::vector<int64_t> xs = layout == 0 ? std::vector<int64_t>{r.seq, r.batch, r.input}
                                        : std::vector<int64_t>{r.batch, r.seq, r.input};
  std::vector<int64_t> state = layout == 0 ? std::vector<int64_t>{nd, r.batch, r.hidden}
                                           : std::vector<int64_t>{r.batch, nd, r.hidden};
  const float ws = 0.6f;  // weights small enough that states stay in range
  c.inputs.push_back(RandomTensor(t, xs, seed));
  c.inputs.push_back(RandomTensor(t, {nd, gates * r.hidden, r.input}, seed + 1, -ws, ws));
  c.inputs.push_back(RandomTensor(t, {nd, gates * r.hidden, r.hidden}, seed + 2, -ws, ws));
  c.inputs.push_back(r.bias ? RandomTensor(t, {nd, 2 * gates * r.hidden}, seed + 3, -0.5f, 0.5f) : runtime::Tensor());
  if (r.lens.empty()) {
    c.inputs.push_back(runtime::Tensor());
  } else {
    runtime::Tensor lens =
        runtime::Tensor::Allocate(r.lens64 ? ir::DataType::kInt64 : ir::DataType::kInt32, {r.batch}).value();
    for (int64_t b = 0; b < r.batch; ++b) {
      if (r.lens64) lens.data<int64_t>()[b] = r.lens[b];
      else lens.data<int32_t>()[b] = static_cast<int32_t>(r.lens[b]);
    }
    c.inputs.push_back(lens);
  }
  c.inputs.push_back(r.h0 ? RandomTensor(t, state, seed + 4) : runtime::Tensor());
  if (lstm) {
    c.inputs.push_back(r.c0 ? RandomTensor(t, state, seed + 5) : runtime::Tensor());
    c.inputs.push_back(r.peep ? RandomTensor(t, {nd, 3 * r.hidden}, seed + 6, -0.5f, 0.5f) : runtime::Tensor());
  }
  c.constant = {false, true, true, true, false, false, false, true};
  c.outputs = r.outputs ? r.outputs : (lstm ? 3 : 2);
  ExpectCudaMatchesCpu(c, Tol(t));
}

TEST(CudaLstm, ForwardDefaults) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF32, kF16, kBF16}) {
    Rec r;
    Check(r, t);
    r.bias = false;
    r.outputs = 1;  // Y only
    Check(r, t, 7);
  }
}

TEST(CudaLstm, DirectionsStatesPeepholesAndLengths) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF32, kF16}) {
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      Rec r;
      r.direction = dir;
      r.h0 = r.c0 = r.peep = true;
      Check(r, t);
      r.lens = {5, 0, 3};
      Check(r, t, 11);
      r.lens64 = true;
      r.lens = {2, 5, 1};
      r.outputs = 2;  // Y and Y_h
      Check(r, t, 21);
    }
  }
}

TEST(CudaLstm, Layout1AndOpset7) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF32, kF16}) {
    Rec r;
    r.layout = 1;
    r.direction = "bidirectional";
    r.h0 = r.c0 = true;
    r.lens = {4, 5, 0};
    Check(r, t);
    r.direction = "reverse";
    r.lens = {};
    Check(r, t, 5);
    r.opset = 7;  // no layout attribute
    r.direction = "bidirectional";
    Check(r, t, 9);
  }
}

TEST(CudaLstm, ClipInputForgetActivations) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF32, kF16}) {
    Rec r;
    r.direction = "bidirectional";
    r.peep = r.h0 = r.c0 = true;
    r.clip = 0.7f;
    r.input_forget = 1;
    Check(r, t);
    r.clip.reset();
    r.input_forget = 0;
    // One set for both directions; alphas/betas consumed in order.
    r.acts = {"HardSigmoid", "ScaledTanh", "Elu"};
    r.alphas = {0.3f, 0.9f, 1.1f};
    r.betas = {0.45f, 1.2f};
    Check(r, t, 3);
    r.acts = {"Sigmoid", "Softsign", "Tanh", "HardSigmoid", "Tanh", "Softplus"};
    r.alphas = {};
    r.betas = {};
    Check(r, t, 4);
  }
}

TEST(CudaLstm, LargeOddSizes) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF32, kF16, kBF16}) {
    Rec r;
    r.direction = "bidirectional";
    r.seq = 9;
    r.batch = 5;
    r.input = 33;
    r.hidden = 127;
    r.h0 = r.c0 = true;
    r.lens = {9, 1, 7, 0, 8};
    Check(r, t);
  }
}

TEST(CudaGru, LinearBeforeResetDirectionsLayouts) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF32, kF16, kBF16}) {
    for (int64_t lbr : {0, 1}) {
      for (const char* dir : {"forward", "reverse", "bidirectional"}) {
        Rec r;
        r.op = "GRU";
        r.lbr = lbr;
        r.direction = dir;
        Check(r, t);
        r.h0 = true;
        r.lens = {3, 5, 0};
        r.layout = 1;
        Check(r, t, 13);
        r.bias = false;
        r.layout = 0;
        r.lens64 = true;
        r.lens = {1, 4, 5};
        r.outputs = 1;
        Check(r, t, 17);
      }
    }
  }
}

TEST(CudaGru, ClipActivationsAndSizes) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF32, kF16}) {
    for (int64_t lbr : {0, 1}) {
      Rec r;
      r.op = "GRU";
      r.lbr = lbr;
      r.direction = "bidirectional";
      r.clip = 0.5f;
      r.h0 = true;
      Check(r, t);
      r.clip.reset();
      r.acts = {"HardSigmoid", "Softsign", "Sigmoid", "Affine"};
      r.alphas = {0.25f, 0.8f};
      r.betas = {0.5f, 0.1f};
      Check(r, t, 2);
      r.acts = {};
      r.alphas = {};
      r.betas = {};
      r.seq = 6;
      r.batch = 7;
      r.input = 31;
      r.hidden = 127;
      r.lens = {6, 2, 0, 5, 6, 1, 3};
      Check(r, t, 3);
    }
  }
}

TEST(CudaRnn, DirectionsLengthsLayouts) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF32, kF16, kBF16}) {
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      Rec r;
      r.op = "RNN";
      r.direction = dir;
      Check(r, t);
      r.h0 = true;
      r.lens = {2, 0, 5};
      r.layout = 1;
      Check(r, t, 19);
      r.bias = false;
      r.opset = 7;
      r.outputs = 1;
      Check(r, t, 23);
    }
  }
}

TEST(CudaRnn, ActivationsAndClip) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (ir::DataType t : {kF32, kF16}) {
    Rec r;
    r.op = "RNN";
    r.h0 = true;
    for (const char* act : {"Relu", "Tanh", "Sigmoid", "Softsign", "Softplus"}) {
      r.acts = {act};
      Check(r, t);
    }
    r.direction = "bidirectional";
    // ThresholdedRelu jumps at alpha: a float16 rounding may flip a value.
    r.acts = {"LeakyRelu", t == kF32 ? "ThresholdedRelu" : "Relu"};
    r.alphas = {0.05f, 0.1f};
    Check(r, t, 2);
    r.acts = {"Elu", "ScaledTanh"};
    r.alphas = {0.7f, 1.3f};
    r.betas = {0.6f};
    r.clip = 0.8f;
    Check(r, t, 3);
    r.acts = {"Affine"};  // one function for both directions
    r.alphas = {0.5f};
    r.betas = {0.25f};
    r.clip.reset();
    r.seq = 11;
    r.batch = 2;
    r.input = 129;
    r.hidden = 65;
    Check(r, t, 4);
  }
}

}  // namespace
}  // namespace vigil::cuda::testing
