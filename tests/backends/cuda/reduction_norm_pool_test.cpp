// The CUDA reduction, normalisation and pooling kernels (reduction.cu,
// normalization.cu, pool.cu) against the CPU reference on random data: every
// attribute combination the kernels claim, odd sizes, both the per-thread and
// the per-block paths, float32 and float16.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/kernel_test_util.h"
#include "backends/cuda/cuda_test_util.h"

namespace vigil::cuda {
namespace {

using cpu::testing::FloatAttr;
using cpu::testing::IntAttr;
using cpu::testing::IntsAttr;
using cpu::testing::StringAttr;
using ir::DataType;
using testing::ExpectCudaMatchesCpu;
using testing::NodeCase;
using testing::RandomTensor;

constexpr DataType kF32 = DataType::kFloat32;
constexpr DataType kF16 = DataType::kFloat16;
const DataType kFloatTypes[] = {kF32, kF16};

double Tol(DataType t, double f32 = 1e-5) { return t == kF32 ? f32 : 1e-2; }

runtime::Tensor Int64s(std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  return cpu::testing::MakeTensor(DataType::kInt64, std::move(shape), v);
}

std::string Join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += std::to_string(x) + ",";
  return s;
}

// --- Reduce* ------------------------------------------------------------------

struct ReduceOp {
  const char* name;
  int axes_input_since;
  float lo, hi;  // input range (positive for LogSum; near 1 for Prod)
};
const ReduceOp kReduceOps[] = {
    {"ReduceSum", 13, -1, 1},     {"ReduceMean", 18, -1, 1},      {"ReduceMax", 18, -1, 1},
    {"ReduceMin", 18, -1, 1},     {"ReduceProd", 18, 0.8f, 1.25f}, {"ReduceL1", 18, -1, 1},
    {"ReduceL2", 18, -1, 1},      {"ReduceSumSquare", 18, -1, 1}, {"ReduceLogSum", 18, 0.1f, 2},
    {"ReduceLogSumExp", 18, -3, 3},
};

// One Reduce* node, its axes as an attribute (old opset) or a constant input.
NodeCase Reduce(const ReduceOp& op, bool axes_input, DataType t, std::vector<int64_t> shape,
                const std::vector<int64_t>& axes, bool has_axes, int64_t keepdims, uint32_t seed,
                int64_t noop = -1) {
  NodeCase c;
  c.op = op.name;
  c.opset = axes_input ? op.axes_input_since : op.axes_input_since - 1;
  c.inputs.push_back(RandomTensor(t, std::move(shape), seed, op.lo, op.hi));
  c.attributes.push_back(IntAttr("keepdims", keepdims));
  if (axes_input) {
    if (has_axes) {
      c.inputs.push_back(Int64s({static_cast<int64_t>(axes.size())}, axes));
      c.constant = {false, true};
    }
    if (noop >= 0) c.attributes.push_back(IntAttr("noop_with_empty_axes", noop));
  } else if (has_axes) {
    c.attributes.push_back(IntsAttr("axes", axes));
  }
  return c;
}

TEST(CudaReduce, AxesKeepdimsAndOpsets) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const std::vector<std::vector<int64_t>> axes_sets = {{0}, {1}, {-1}, {0, 2}, {1, 2}, {1, 3}, {0, 1, 2, 3}};
  uint32_t seed = 1;
  for (const ReduceOp& op : kReduceOps) {
    for (DataType t : kFloatTypes) {
      for (bool axes_input : {false, true}) {
        for (int64_t keepdims : {0, 1}) {
          for (const auto& axes : axes_sets) {
            SCOPED_TRACE(fmt::format("{} axes [{}] keepdims {} {} dtype {}", op.name, Join(axes), keepdims,
                                     axes_input ? "input" : "attribute", ir::DataTypeName(t)));
            ExpectCudaMatchesCpu(Reduce(op, axes_input, t, {3, 13, 5, 7}, axes, true, keepdims, seed++),
                                 Tol(t, 1e-4));
          }
          // No axes: everything is reduced.
          SCOPED_TRACE(fmt::format("{} without axes keepdims {}", op.name, keepdims));
          ExpectCudaMatchesCpu(Reduce(op, axes_input, t, {3, 13, 5, 7}, {}, false, keepdims, seed++), Tol(t, 1e-4));
        }
      }
    }
  }
}

TEST(CudaReduce, NoopWithEmptyAxes) {
  VIGIL_SKIP_WITHOUT_CUDA();
  uint32_t seed = 100;
  for (const ReduceOp& op : kReduceOps) {
    for (DataType t : kFloatTypes) {
      SCOPED_TRACE(fmt::format("{} {}", op.name, ir::DataTypeName(t)));
      // No axes input, and an empty one, with noop_with_empty_axes=1: each
      // element is its own set.
      ExpectCudaMatchesCpu(Reduce(op, true, t, {2, 13, 7}, {}, false, 1, seed++, 1), Tol(t, 1e-4));
      ExpectCudaMatchesCpu(Reduce(op, true, t, {2, 13, 7}, {}, true, 0, seed++, 1), Tol(t, 1e-4));
      // An empty axes input without it: reduce all.
      ExpectCudaMatchesCpu(Reduce(op, true, t, {2, 13, 7}, {}, true, 0, seed++, 0), Tol(t, 1e-4));
    }
  }
}

TEST(CudaReduce, LargeSetsUseBlocks) {
  VIGIL_SKIP_WITHOUT_CUDA();
  struct Case {
    std::vector<int64_t> shape, axes;
  };
  const Case cases[] = {
      {{2, 127, 3136}, {2}},      // GlobalAveragePool-like: contiguous sets
      {{64, 768}, {-1}},          // LayerNorm-like rows
      {{4100, 8}, {0}},           // few outputs, strided sets
      {{3, 1000, 5}, {0, 2}},     // two reduced dims with a kept one between
      {{5000, 300}, {0}},         // many outputs, kept inner dim: one thread each
      {{7, 33, 129}, {0, 1, 2}},  // everything
  };
  uint32_t seed = 200;
  for (const ReduceOp& op : kReduceOps) {
    if (std::string(op.name) == "ReduceProd") continue;  // products of thousands of values under/overflow
    for (DataType t : kFloatTypes) {
      for (const Case& c : cases) {
        SCOPED_TRACE(fmt::format("{} shape [{}] axes [{}] {}", op.name, Join(c.shape), Join(c.axes),
                                 ir::DataTypeName(t)));
        ExpectCudaMatchesCpu(Reduce(op, true, t, c.shape, c.axes, true, 1, seed++), Tol(t, 1e-4));
      }
    }
  }
  // Prod over a large set of values very close to 1.
  ReduceOp prod{"ReduceProd", 18, 0.999f, 1.001f};
  ExpectCudaMatchesCpu(Reduce(prod, true, kF32, {2, 127, 3136}, {2}, true, 1, 300), 1e-4);
}

TEST(CudaReduce, Integers) {
  VIGIL_SKIP_WITHOUT_CUDA();
  std::vector<int64_t> v64(3 * 13 * 300);
  std::vector<int32_t> v32(v64.size());
  for (size_t i = 0; i < v64.size(); ++i) {
    v64[i] = static_cast<int64_t>((i * 2654435761u) % 2001) - 1000;
    v32[i] = static_cast<int32_t>(v64[i]);
  }
  for (const char* name : {"ReduceSum", "ReduceMax", "ReduceMin"}) {
    for (const std::vector<int64_t>& axes : {std::vector<int64_t>{2}, std::vector<int64_t>{0, 2}}) {
      for (DataType t : {DataType::kInt64, DataType::kInt32}) {
        SCOPED_TRACE(fmt::format("{} axes [{}] {}", name, Join(axes), ir::DataTypeName(t)));
        NodeCase c;
        c.op = name;
        c.opset = 18;
        c.inputs = {t == DataType::kInt64 ? cpu::testing::MakeTensor(t, {3, 13, 300}, v64)
                                          : cpu::testing::MakeTensor(t, {3, 13, 300}, v32),
                    Int64s({static_cast<int64_t>(axes.size())}, axes)};
        c.constant = {false, true};
        ExpectCudaMatchesCpu(c, 0);
      }
    }
  }
}

// --- ArgMax / ArgMin -----------------------------------------------------------

TEST(CudaArgReduce, AxesKeepdimsAndLastIndex) {
  VIGIL_SKIP_WITHOUT_CUDA();
  uint32_t seed = 400;
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (DataType t : kFloatTypes) {
      for (const std::vector<int64_t>& shape :
           {std::vector<int64_t>{3, 13, 5}, std::vector<int64_t>{4, 32003}, std::vector<int64_t>{2, 300, 9}}) {
        for (int64_t axis = -1; axis < static_cast<int64_t>(shape.size()); ++axis) {
          for (int64_t keepdims : {0, 1}) {
            for (int64_t last : {0, 1}) {
              SCOPED_TRACE(fmt::format("{} shape [{}] axis {} keepdims {} last {} {}", op, Join(shape), axis,
                                       keepdims, last, ir::DataTypeName(t)));
              NodeCase c;
              c.op = op;
              c.opset = 13;
              c.inputs = {RandomTensor(t, shape, seed++)};
              c.attributes = {IntAttr("axis", axis), IntAttr("keepdims", keepdims),
                              IntAttr("select_last_index", last)};
              ExpectCudaMatchesCpu(c, 0);
            }
          }
        }
      }
    }
  }
}

TEST(CudaArgReduce, TiesPickFirstOrLast) {
  VIGIL_SKIP_WITHOUT_CUDA();
  // Few distinct values, so every line has ties for its extreme.
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{5, 7, 11}, std::vector<int64_t>{3, 5000}}) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> f(n);
    std::vector<int64_t> i64(n);
    for (int64_t i = 0; i < n; ++i) {
      i64[i] = (i * 7 + i / 3) % 4;
      f[i] = static_cast<float>(i64[i]);
    }
    for (const char* op : {"ArgMax", "ArgMin"}) {
      for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()); ++axis) {
        for (int64_t last : {0, 1}) {
          for (bool ints : {false, true}) {
            SCOPED_TRACE(fmt::format("{} shape [{}] axis {} last {} {}", op, Join(shape), axis, last,
                                     ints ? "int64" : "float32"));
            NodeCase c;
            c.op = op;
            c.opset = 13;
            c.inputs = {ints ? Int64s(shape, i64) : cpu::testing::MakeTensor(kF32, shape, f)};
            c.attributes = {IntAttr("axis", axis), IntAttr("select_last_index", last)};
            ExpectCudaMatchesCpu(c, 0);
          }
        }
      }
    }
  }
}

// --- Softmax / LogSoftmax --------------------------------------------------------

TEST(CudaSoftmax, AxesAndOpsets) {
  VIGIL_SKIP_WITHOUT_CUDA();
  uint32_t seed = 500;
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (DataType t : kFloatTypes) {
      for (int64_t opset : {11, 13}) {
        for (const std::vector<int64_t>& shape :
             {std::vector<int64_t>{3, 13, 127}, std::vector<int64_t>{4, 5000}, std::vector<int64_t>{2, 3, 4, 33}}) {
          for (int64_t axis = -1; axis < static_cast<int64_t>(shape.size()); ++axis) {
            SCOPED_TRACE(fmt::format("{} opset {} shape [{}] axis {} {}", op, opset, Join(shape), axis,
                                     ir::DataTypeName(t)));
            NodeCase c;
            c.op = op;
            c.opset = opset;
            c.inputs = {RandomTensor(t, shape, seed++, -4, 4)};
            c.attributes = {IntAttr("axis", axis)};
            ExpectCudaMatchesCpu(c, Tol(t, 1e-4));
          }
          // The default axis (1 before opset 13, -1 from it).
          NodeCase c;
          c.op = op;
          c.opset = opset;
          c.inputs = {RandomTensor(t, shape, seed++, -4, 4)};
          ExpectCudaMatchesCpu(c, Tol(t, 1e-4));
        }
      }
    }
  }
}

// --- BatchNormalization -----------------------------------------------------------

NodeCase BatchNorm(DataType t, std::vector<int64_t> shape, int64_t opset, int64_t params, uint32_t seed,
                   std::vector<ir::Attribute> attrs = {}) {
  NodeCase c;
  c.op = "BatchNormalization";
  c.opset = opset;
  c.inputs = {RandomTensor(t, std::move(shape), seed, -2, 2), RandomTensor(t, {params}, seed + 1, 0.5f, 1.5f),
              RandomTensor(t, {params}, seed + 2), RandomTensor(t, {params}, seed + 3),
              RandomTensor(t, {params}, seed + 4, 0.2f, 2)};
  c.attributes = std::move(attrs);
  return c;
}

TEST(CudaBatchNorm, RanksAndEpsilon) {
  VIGIL_SKIP_WITHOUT_CUDA();
  uint32_t seed = 600;
  for (DataType t : kFloatTypes) {
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 13, 7, 9}, std::vector<int64_t>{3, 127},
                                              std::vector<int64_t>{2, 5, 3, 4, 6}, std::vector<int64_t>{1, 64, 56, 56}}) {
      SCOPED_TRACE(fmt::format("shape [{}] {}", Join(shape), ir::DataTypeName(t)));
      ExpectCudaMatchesCpu(BatchNorm(t, shape, 15, shape[1], seed), Tol(t));
      ExpectCudaMatchesCpu(BatchNorm(t, shape, 9, shape[1], seed + 10, {FloatAttr("epsilon", 1e-2f)}), Tol(t));
      seed += 20;
    }
  }
  // spatial=0 before opset 9: one parameter per element of C x D1 x ...
  ExpectCudaMatchesCpu(BatchNorm(kF32, {2, 3, 5, 7}, 7, 3 * 5 * 7, 700, {IntAttr("spatial", 0)}), 1e-5);
}

// --- InstanceNormalization / GroupNormalization / LayerNormalization --------------

TEST(CudaInstanceNorm, Shapes) {
  VIGIL_SKIP_WITHOUT_CUDA();
  uint32_t seed = 800;
  for (DataType t : kFloatTypes) {
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 13, 7, 9}, std::vector<int64_t>{2, 127, 50},
                                              std::vector<int64_t>{1, 3, 300, 301}, std::vector<int64_t>{3, 5}}) {
      SCOPED_TRACE(fmt::format("shape [{}] {}", Join(shape), ir::DataTypeName(t)));
      NodeCase c;
      c.op = "InstanceNormalization";
      c.opset = 6;
      c.inputs = {RandomTensor(t, shape, seed, -2, 3), RandomTensor(t, {shape[1]}, seed + 1),
                  RandomTensor(t, {shape[1]}, seed + 2)};
      c.attributes = {FloatAttr("epsilon", 1e-3f)};
      ExpectCudaMatchesCpu(c, Tol(t, 1e-4));
      seed += 3;
    }
  }
}

TEST(CudaGroupNorm, PerGroupAndPerChannel) {
  VIGIL_SKIP_WITHOUT_CUDA();
  uint32_t seed = 900;
  struct Case {
    std::vector<int64_t> shape;
    int64_t groups;
  };
  const Case cases[] = {{{2, 12, 5, 7}, 3}, {{2, 64, 33}, 32}, {{1, 6, 4, 4, 4}, 6}, {{3, 10}, 1}};
  for (DataType t : kFloatTypes) {
    for (int64_t opset : {18, 21}) {
      for (const Case& k : cases) {
        SCOPED_TRACE(fmt::format("opset {} shape [{}] groups {} {}", opset, Join(k.shape), k.groups,
                                 ir::DataTypeName(t)));
        const int64_t params = opset >= 21 ? k.shape[1] : k.groups;
        NodeCase c;
        c.op = "GroupNormalization";
        c.opset = opset;
        c.inputs = {RandomTensor(t, k.shape, seed, -2, 3), RandomTensor(t, {params}, seed + 1),
                    RandomTensor(t, {params}, seed + 2)};
        c.attributes = {IntAttr("num_groups", k.groups), FloatAttr("epsilon", 1e-4f)};
        ExpectCudaMatchesCpu(c, Tol(t, 1e-4));
        seed += 3;
      }
    }
  }
}

TEST(CudaLayerNorm, AxesBiasAndStatistics) {
  VIGIL_SKIP_WITHOUT_CUDA();
  uint32_t seed = 1000;
  const std::vector<int64_t> shape = {3, 13, 127};
  for (DataType t : kFloatTypes) {
    for (int64_t axis : {-1, 1, 0, 2}) {
      const int64_t a = axis < 0 ? axis + 3 : axis;
      const std::vector<int64_t> param_shape(shape.begin() + a, shape.end());
      for (bool bias : {true, false}) {
        for (size_t outputs : {size_t{1}, size_t{3}}) {
          SCOPED_TRACE(fmt::format("axis {} bias {} outputs {} {}", axis, bias, outputs, ir::DataTypeName(t)));
          NodeCase c;
          c.op = "LayerNormalization";
          c.opset = 17;
          c.inputs = {RandomTensor(t, shape, seed, -2, 3), RandomTensor(t, param_shape, seed + 1),
                      bias ? RandomTensor(t, param_shape, seed + 2) : runtime::Tensor()};
          c.attributes = {IntAttr("axis", axis), FloatAttr("epsilon", 1e-3f)};
          c.outputs = outputs;
          ExpectCudaMatchesCpu(c, Tol(t, 1e-4));
          seed += 3;
        }
      }
    }
  }
  // Transformer rows, and Scale/B broadcast within the normalised dims.
  for (DataType t : kFloatTypes) {
    NodeCase c;
    c.op = "LayerNormalization";
    c.opset = 17;
    c.inputs = {RandomTensor(t, {64, 768}, 1100), RandomTensor(t, {768}, 1101), RandomTensor(t, {768}, 1102)};
    ExpectCudaMatchesCpu(c, Tol(t, 1e-4));
    c.inputs = {RandomTensor(t, {3, 13, 127}, 1103), RandomTensor(t, {1, 127}, 1104), RandomTensor(t, {13, 1}, 1105)};
    c.attributes = {IntAttr("axis", 1)};
    ExpectCudaMatchesCpu(c, Tol(t, 1e-4));
  }
  // Statistics in float16.
  NodeCase c;
  c.op = "LayerNormalization";
  c.opset = 17;
  c.inputs = {RandomTensor(kF16, {5, 300}, 1106), RandomTensor(kF16, {300}, 1107), RandomTensor(kF16, {300}, 1108)};
  c.attributes = {IntAttr("stash_type", 10)};
  c.outputs = 3;
  ExpectCudaMatchesCpu(c, 1e-2);
}

// --- pools ------------------------------------------------------------------------------

struct PoolCase {
  std::vector<int64_t> x, kernel, strides, pads, dilations;
  std::string auto_pad;
  int64_t ceil_mode = 0;
};

NodeCase Pool(const std::string& op, DataType t, const PoolCase& p, uint32_t seed, int64_t opset,
              std::vector<ir::Attribute> extra = {}) {
  NodeCase c;
  c.op = op;
  c.opset = opset;
  c.inputs = {RandomTensor(t, p.x, seed, -2, 2)};
  c.attributes = {IntsAttr("kernel_shape", p.kernel)};
  if (!p.strides.empty()) c.attributes.push_back(IntsAttr("strides", p.strides));
  if (!p.pads.empty()) c.attributes.push_back(IntsAttr("pads", p.pads));
  if (!p.dilations.empty()) c.attributes.push_back(IntsAttr("dilations", p.dilations));
  if (!p.auto_pad.empty()) c.attributes.push_back(StringAttr("auto_pad", p.auto_pad));
  if (p.ceil_mode) c.attributes.push_back(IntAttr("ceil_mode", 1));
  for (auto& a : extra) c.attributes.push_back(std::move(a));
  return c;
}

const PoolCase kPoolCases[] = {
    {{2, 13, 17}, {3}, {}, {}, {}, "", 0},                                     // 1-D plain
    {{2, 5, 23}, {4}, {3}, {1, 2}, {}, "", 1},                                 // 1-D ceil_mode, pads
    {{2, 13, 11, 12}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, "", 0},                // 2-D ResNet-like
    {{2, 13, 11, 12}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, "", 1},                // with ceil_mode
    {{1, 7, 10, 9}, {2, 3}, {3, 2}, {0, 1, 1, 2}, {}, "", 1},                  // asymmetric pads, ceil
    {{1, 7, 10, 9}, {3, 2}, {2, 1}, {}, {}, "SAME_UPPER", 0},
    {{1, 7, 10, 9}, {3, 2}, {2, 3}, {}, {}, "SAME_LOWER", 0},
    {{1, 7, 10, 9}, {3, 3}, {2, 2}, {}, {}, "VALID", 1},
    {{2, 3, 12, 13}, {3, 3}, {1, 2}, {2, 2, 2, 2}, {2, 3}, "", 0},             // dilations
    {{2, 3, 12, 13}, {2, 2}, {3, 3}, {1, 1, 1, 1}, {3, 2}, "", 1},             // dilations, ceil
    {{1, 4, 5, 6, 7}, {2, 3, 2}, {2, 1, 2}, {1, 0, 1, 0, 1, 1}, {}, "", 0},    // 3-D
    {{1, 4, 5, 6, 7}, {2, 2, 3}, {2, 2, 2}, {}, {}, "SAME_UPPER", 1},          // 3-D SAME
    {{1, 3, 56, 56}, {7, 7}, {1, 1}, {3, 3, 3, 3}, {}, "", 0},                 // large window
};

TEST(CudaPool, MaxPool) {
  VIGIL_SKIP_WITHOUT_CUDA();
  uint32_t seed = 1200;
  for (DataType t : kFloatTypes) {
    for (const PoolCase& p : kPoolCases) {
      SCOPED_TRACE(fmt::format("x [{}] kernel [{}] pads [{}] auto_pad '{}' ceil {} {}", Join(p.x), Join(p.kernel),
                               Join(p.pads), p.auto_pad, p.ceil_mode, ir::DataTypeName(t)));
      ExpectCudaMatchesCpu(Pool("MaxPool", t, p, seed++, 12), 0);
    }
  }
  // int8 and uint8 (opset 12).
  std::vector<int8_t> v(2 * 3 * 9 * 10);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int8_t>((i * 37) % 256 - 128);
  for (DataType t : {DataType::kInt8, DataType::kUint8}) {
    NodeCase c;
    c.op = "MaxPool";
    c.opset = 12;
    c.inputs = {cpu::testing::MakeTensor(t, {2, 3, 9, 10}, v)};
    c.attributes = {IntsAttr("kernel_shape", {3, 3}), IntsAttr("strides", {2, 2}), IntsAttr("pads", {1, 1, 1, 1}),
                    IntAttr("ceil_mode", 1)};
    ExpectCudaMatchesCpu(c, 0);
  }
}

TEST(CudaPool, AveragePool) {
  VIGIL_SKIP_WITHOUT_CUDA();
  uint32_t seed = 1300;
  for (DataType t : kFloatTypes) {
    for (const PoolCase& p : kPoolCases) {
      for (int64_t include_pad : {0, 1}) {
        SCOPED_TRACE(fmt::format("x [{}] kernel [{}] pads [{}] auto_pad '{}' ceil {} include_pad {} {}", Join(p.x),
                                 Join(p.kernel), Join(p.pads), p.auto_pad, p.ceil_mode, include_pad,
                                 ir::DataTypeName(t)));
        // Dilations came with opset 19.
        const int64_t opset = p.dilations.empty() ? 11 : 19;
        ExpectCudaMatchesCpu(Pool("AveragePool", t, p, seed++, opset, {IntAttr("count_include_pad", include_pad)}),
                             Tol(t));
      }
    }
  }
}

TEST(CudaPool, LpPool) {
  VIGIL_SKIP_WITHOUT_CUDA();
  uint32_t seed = 1400;
  for (DataType t : kFloatTypes) {
    for (const PoolCase& p : kPoolCases) {
      for (int64_t power : {1, 2, 3}) {
        SCOPED_TRACE(fmt::format("x [{}] kernel [{}] p {} {}", Join(p.x), Join(p.kernel), power, ir::DataTypeName(t)));
        ExpectCudaMatchesCpu(Pool("LpPool", t, p, seed++, 18, {IntAttr("p", power)}), Tol(t, 1e-4));
      }
    }
  }
}

TEST(CudaPool, GlobalPools) {
  VIGIL_SKIP_WITHOUT_CUDA();
  uint32_t seed = 1500;
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) {
    for (DataType t : kFloatTypes) {
      for (const std::vector<int64_t>& shape :
           {std::vector<int64_t>{2, 13, 56, 56}, std::vector<int64_t>{2, 127, 7, 7}, std::vector<int64_t>{1, 3, 5},
            std::vector<int64_t>{2, 5, 3, 4, 6}, std::vector<int64_t>{1, 2, 300, 301}}) {
        SCOPED_TRACE(fmt::format("{} shape [{}] {}", op, Join(shape), ir::DataTypeName(t)));
        NodeCase c;
        c.op = op;
        c.opset = 2;
        c.inputs = {RandomTensor(t, shape, seed++)};
        ExpectCudaMatchesCpu(c, Tol(t, 1e-4));
      }
    }
  }
}

// --- special values, empty sets, bfloat16 ---------------------------------------------

runtime::Tensor WithSpecials(std::vector<int64_t> shape, uint32_t seed) {
  runtime::Tensor t = RandomTensor(kF32, std::move(shape), seed);
  float* v = t.data<float>();
  const size_t n = t.element_count();
  for (size_t i = 0; i < n; i += 7) v[i] = std::nanf("");
  for (size_t i = 3; i < n; i += 11) v[i] = INFINITY;
  for (size_t i = 5; i < n; i += 13) v[i] = -INFINITY;
  return t;
}

TEST(CudaSpecialValues, NanAndInfinity) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (const char* op : {"ReduceMax", "ReduceMin", "ReduceSum", "ReduceLogSumExp", "ReduceL1"}) {
    for (const std::vector<int64_t>& axes : {std::vector<int64_t>{1}, std::vector<int64_t>{0, 2}}) {
      SCOPED_TRACE(fmt::format("{} axes [{}]", op, Join(axes)));
      NodeCase c;
      c.op = op;
      c.opset = 18;
      c.inputs = {WithSpecials({4, 30, 9}, 1600), Int64s({static_cast<int64_t>(axes.size())}, axes)};
      c.constant = {false, true};
      ExpectCudaMatchesCpu(c, 1e-5);
    }
  }
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (int64_t last : {0, 1}) {
      for (const std::vector<int64_t>& shape : {std::vector<int64_t>{4, 30, 9}, std::vector<int64_t>{2, 3000}}) {
        SCOPED_TRACE(fmt::format("{} last {} shape [{}]", op, last, Join(shape)));
        NodeCase c;
        c.op = op;
        c.opset = 13;
        c.inputs = {WithSpecials(shape, 1601)};
        c.attributes = {IntAttr("axis", 1), IntAttr("select_last_index", last)};
        ExpectCudaMatchesCpu(c, 0);
      }
    }
  }
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    // Rows with NaN, rows with +-inf, and rows of only -inf.
    runtime::Tensor x = RandomTensor(kF32, {6, 40}, 1602);
    float* v = x.data<float>();
    v[3] = std::nanf("");
    v[40 + 5] = INFINITY;
    v[80 + 7] = -INFINITY;
    for (int i = 0; i < 40; ++i) v[120 + i] = -INFINITY;
    for (int64_t axis : {0, 1}) {
      NodeCase c;
      c.op = op;
      c.opset = 13;
      c.inputs = {x};
      c.attributes = {IntAttr("axis", axis)};
      ExpectCudaMatchesCpu(c, 1e-5);
    }
  }
  NodeCase pool;
  pool.op = "MaxPool";
  pool.opset = 12;
  pool.inputs = {WithSpecials({2, 3, 9, 10}, 1603)};
  pool.attributes = {IntsAttr("kernel_shape", {3, 3}), IntsAttr("pads", {1, 1, 1, 1})};
  ExpectCudaMatchesCpu(pool, 0);
  pool.op = "GlobalMaxPool";
  pool.attributes = {};
  ExpectCudaMatchesCpu(pool, 0);
}

TEST(CudaSpecialValues, EmptyReducedSets) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (const ReduceOp& op : kReduceOps) {
    SCOPED_TRACE(op.name);
    ExpectCudaMatchesCpu(Reduce(op, true, kF32, {3, 0, 4}, {1}, true, 1, 1700), 1e-5);
    ExpectCudaMatchesCpu(Reduce(op, true, kF32, {3, 0, 4}, {0}, true, 0, 1701), 1e-5);
  }
}

TEST(CudaBfloat16, EachFamily) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const DataType bf16 = DataType::kBfloat16;
  ExpectCudaMatchesCpu(Reduce(kReduceOps[1], true, bf16, {3, 13, 300}, {2}, true, 1, 1800), 1e-2);
  NodeCase c;
  c.op = "Softmax";
  c.opset = 13;
  c.inputs = {RandomTensor(bf16, {5, 1000}, 1801, -4, 4)};
  ExpectCudaMatchesCpu(c, 1e-2);
  c.op = "LayerNormalization";
  c.opset = 17;
  c.inputs = {RandomTensor(bf16, {5, 768}, 1802), RandomTensor(bf16, {768}, 1803), RandomTensor(bf16, {768}, 1804)};
  ExpectCudaMatchesCpu(c, 1e-2);
  ExpectCudaMatchesCpu(Pool("AveragePool", bf16, kPoolCases[3], 1805, 11), 1e-2);
  c.op = "GlobalAveragePool";
  c.opset = 1;
  c.inputs = {RandomTensor(bf16, {2, 13, 56, 56}, 1806)};
  ExpectCudaMatchesCpu(c, 1e-2);
}

}  // namespace
}  // namespace vigil::cuda
