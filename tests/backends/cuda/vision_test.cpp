// Vision and detection ops on the GPU (backends/cuda/vision.cu,
// detection.cu) against the CPU kernels on the same inputs: GridSample (2-D,
// 3-D and 1-D; every mode, padding and align_corners; grids reaching past
// [-1, 1] and onto exact pixel centres and halves; float32, float16,
// bfloat16 and a double grid), AffineGrid (2-D, 3-D, align_corners, sizes of
// 1), RoiAlign (avg and max, half_pixel and output_half_pixel, opset 10,
// adaptive and fixed sampling, rois partly outside the map and inverted) and
// NonMaxSuppression (ties, flipped corners, center_point_box, NaN scores,
// several batches and classes, max_output_boxes_per_class 0, no score
// threshold). Each node runs on the CUDA backend directly with NaN-poisoned
// outputs, and NonMaxSuppression also through a session (its output size is
// known only at run time).
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <sstream>

#include "session_test_util.h"

namespace vigil::cuda::testing {
namespace {

namespace kt = vigil::cpu::testing;
using ir::DataType;

// Runs `node` on the CUDA backend: inputs whose bit is set in `host_mask`
// stay on the host (the kernels' host-read inputs), the others go to the
// device; outputs are poisoned with NaN (all-ones bytes) first.
Result<std::vector<runtime::Tensor>> RunOnCuda(const ir::Node& node, int64_t opset,
                                               const std::vector<const runtime::Tensor*>& inputs,
                                               uint32_t host_mask = 0) {
  auto backend = CudaBackendForTests();
  std::vector<runtime::Tensor> device(inputs.size());
  std::vector<const runtime::Tensor*> args(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) continue;
    if ((host_mask >> i) & 1) {
      args[i] = inputs[i];
      continue;
    }
    VIGIL_ASSIGN_OR_RETURN(device[i], backend->ToDevice(*inputs[i]));
    args[i] = &device[i];
  }
  VIGIL_RETURN_IF_ERROR(backend->Synchronize());
  std::vector<runtime::Tensor> outputs;
  PoisonedDeviceOutputs allocator(*backend);
  VIGIL_RETURN_IF_ERROR(backend->Run(node, opset, args, outputs, allocator));
  VIGIL_RETURN_IF_ERROR(backend->Synchronize());
  std::vector<runtime::Tensor> host;
  for (const runtime::Tensor& t : outputs) {
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor h, backend->ToHost(t));
    host.push_back(std::move(h));
  }
  return host;
}

// The first few differing elements of two float tensors, for failures.
std::string FirstDifferences(const runtime::Tensor& want, const runtime::Tensor& got) {
  std::ostringstream s;
  auto as_double = [](const runtime::Tensor& t, size_t i) -> double {
    switch (t.dtype()) {
      case DataType::kFloat32: return t.data<float>()[i];
      case DataType::kFloat16: return Float16ToFloat(t.data<uint16_t>()[i]);
      case DataType::kBfloat16: return Bfloat16ToFloat(t.data<uint16_t>()[i]);
      case DataType::kFloat64: return t.data<double>()[i];
      case DataType::kInt64: return static_cast<double>(t.data<int64_t>()[i]);
      default: return NAN;
    }
  };
  if (want.element_count() != got.element_count()) return "different element counts";
  int shown = 0;
  for (size_t i = 0; i < want.element_count() && shown < 8; ++i) {
    double w = as_double(want, i), g = as_double(got, i);
    bool same = (std::isnan(w) && std::isnan(g)) || std::fabs(w - g) <= 1e-6 * std::max(1.0, std::fabs(w));
    if (same) continue;
    s << " [" << i << "] cpu " << w << " cuda " << g << ";";
    ++shown;
  }
  return shown ? s.str() : " (none above 1e-6)";
}

// CUDA vs the CPU kernel: same dtype and shape, NaN in the same places,
// relative L2 error <= tol (exact for integer outputs).
void ExpectMatchesCpu(const ir::Node& node, int64_t opset, const std::vector<const runtime::Tensor*>& inputs,
                      double tol, uint32_t host_mask = 0) {
  auto want = kt::RunKernel(node, opset, inputs);
  ASSERT_TRUE(want.ok()) << "CPU: " << want.status().ToString();
  auto got = RunOnCuda(node, opset, inputs, host_mask);
  ASSERT_TRUE(got.ok()) << "CUDA: " << got.status().ToString();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < want->size(); ++i) {
    const runtime::Tensor& w = (*want)[i];
    const runtime::Tensor& g = (*got)[i];
    const bool is_float = w.dtype() != DataType::kInt64;
    runtime::TensorComparison cmp = runtime::CompareTensors(w, g, is_float ? 1e300 : 0, is_float ? 1e300 : 0);
    ASSERT_TRUE(cmp.same_dtype && cmp.same_shape) << "output " << i << ": cuda " << g.Describe() << ", cpu "
                                                  << w.Describe();
    EXPECT_EQ(cmp.nan_mismatches, 0u) << "output " << i << ": " << cmp.Describe() << FirstDifferences(w, g);
    if (is_float) {
      EXPECT_LE(cmp.rel_l2_error, tol) << "output " << i << ": " << cmp.Describe() << FirstDifferences(w, g);
    } else {
      EXPECT_EQ(cmp.mismatches, 0u) << "output " << i << ": " << cmp.Describe() << FirstDifferences(w, g);
    }
  }
}

double Tolerance(DataType t) { return t == DataType::kFloat32 ? 1e-5 : 5e-3; }

// A float tensor of dtype t holding `values` (rounded to t).
runtime::Tensor FloatTensor(DataType t, std::vector<int64_t> shape, const std::vector<float>& values) {
  runtime::Tensor out = runtime::Tensor::Allocate(t, std::move(shape)).value();
  EXPECT_EQ(out.element_count(), values.size());
  for (size_t i = 0; i < values.size() && i < out.element_count(); ++i) {
    switch (t) {
      case DataType::kFloat32: out.data<float>()[i] = values[i]; break;
      case DataType::kFloat16: out.data<uint16_t>()[i] = FloatToFloat16(values[i]); break;
      case DataType::kBfloat16: out.data<uint16_t>()[i] = FloatToBfloat16(values[i]); break;
      case DataType::kFloat64: out.data<double>()[i] = values[i]; break;
      default: ADD_FAILURE() << "FloatTensor: dtype " << ir::DataTypeName(t);
    }
  }
  return out;
}

// A grid of `count` coordinates in [-1.3, 1.3), every 7th replaced by one of
// the values that land on the edges, on pixel centres and on halves between
// pixels of a 7- or 11-pixel axis (where rounding and reflection decide).
std::vector<float> GridValues(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.3f, 1.3f);
  const float special[] = {-1.0f, 1.0f, 0.0f, -1.0f / 7, 1.0f / 7, 3.0f / 7, -2.0f / 11, 5.0f / 11,
                           -3.0f, 2.5f, 1.0f / 3, -1.0f / 6, 1.0f / 6, 0.5f, -0.5f};
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) {
    v[i] = u(rng);
    if (i % 7 == 3) v[i] = special[(i / 7) % (sizeof(special) / sizeof(special[0]))];
  }
  return v;
}

std::vector<float> Uniform(size_t count, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(count);
  for (float& x : v) x = u(rng);
  return v;
}

int64_t Count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// ---------------------------------------------------------------- GridSample

struct GridCase {
  std::vector<int64_t> x, grid;
  int64_t opset;
};

void CheckGridSample(const GridCase& c, DataType xt, DataType gt, const std::string& mode, const std::string& padding,
                     int64_t align) {
  SCOPED_TRACE(::testing::Message() << "GridSample-" << c.opset << " X " << ::testing::PrintToString(c.x) << " "
                                    << ir::DataTypeName(xt) << " grid " << ::testing::PrintToString(c.grid) << " "
                                    << ir::DataTypeName(gt) << " mode " << mode << " padding " << padding
                                    << " align_corners " << align);
  ir::Node node = kt::MakeNode("GridSample", {"x", "grid"}, {"y"},
                               {kt::StringAttr("mode", mode), kt::StringAttr("padding_mode", padding),
                                kt::IntAttr("align_corners", align)});
  runtime::Tensor x = FloatTensor(xt, c.x, Uniform(Count(c.x), 11 + static_cast<uint32_t>(c.x.back()), -2, 2));
  runtime::Tensor grid = FloatTensor(gt, c.grid, GridValues(Count(c.grid), 5 + static_cast<uint32_t>(c.grid[1])));
  ExpectMatchesCpu(node, c.opset, {&x, &grid}, Tolerance(xt));
}

TEST(CudaVision, GridSample2dEveryModePaddingAndAlignment) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const GridCase c{{2, 13, 7, 11}, {2, 5, 9, 2}, 20};
  for (const char* mode : {"linear", "nearest", "cubic"}) {
    for (const char* padding : {"zeros", "border", "reflection"}) {
      for (int64_t align : {0, 1}) {
        for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16}) {
          CheckGridSample(c, t, t, mode, padding, align);
        }
      }
    }
  }
}

TEST(CudaVision, GridSample16NamesItsModesBilinearAndBicubic) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const GridCase c{{1, 3, 11, 7}, {1, 6, 4, 2}, 16};
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    for (const char* padding : {"zeros", "border", "reflection"}) {
      for (int64_t align : {0, 1}) CheckGridSample(c, DataType::kFloat32, DataType::kFloat32, mode, padding, align);
    }
  }
}

TEST(CudaVision, GridSample3dAnd1d) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const GridCase volume{{2, 3, 4, 7, 5}, {2, 3, 4, 5, 3}, 20};
  const GridCase line{{2, 13, 11}, {2, 17, 1}, 20};
  for (const char* mode : {"linear", "nearest", "cubic"}) {
    for (const char* padding : {"zeros", "border", "reflection"}) {
      for (int64_t align : {0, 1}) {
        CheckGridSample(volume, DataType::kFloat32, DataType::kFloat32, mode, padding, align);
        CheckGridSample(line, DataType::kFloat32, DataType::kFloat32, mode, padding, align);
      }
    }
  }
  CheckGridSample(volume, DataType::kFloat16, DataType::kFloat16, "linear", "reflection", 0);
}

TEST(CudaVision, GridSampleDoubleAndHalfGrids) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const GridCase c{{2, 13, 7, 11}, {2, 5, 9, 2}, 20};
  for (const char* mode : {"linear", "nearest", "cubic"}) {
    CheckGridSample(c, DataType::kFloat32, DataType::kFloat64, mode, "reflection", 0);
    CheckGridSample(c, DataType::kFloat32, DataType::kFloat16, mode, "border", 1);
  }
}

TEST(CudaVision, GridSampleOneByOneImageAndFarGrid) {
  VIGIL_SKIP_WITHOUT_CUDA();
  // A 1x1 image (reflection over an empty range with align_corners) and a
  // grid far outside [-1, 1].
  ir::Node node = kt::MakeNode("GridSample", {"x", "grid"}, {"y"},
                               {kt::StringAttr("mode", "linear"), kt::StringAttr("padding_mode", "reflection"),
                                kt::IntAttr("align_corners", 1)});
  runtime::Tensor x = FloatTensor(DataType::kFloat32, {1, 2, 1, 1}, {3.0f, -5.0f});
  runtime::Tensor grid = FloatTensor(DataType::kFloat32, {1, 1, 4, 2}, {-40.5f, 17.25f, 0, 0, 1e6f, -1e6f, 3, -3});
  ExpectMatchesCpu(node, 20, {&x, &grid}, 1e-6);
  for (const char* padding : {"zeros", "border", "reflection"}) {
    ir::Node far = kt::MakeNode("GridSample", {"x", "grid"}, {"y"},
                                {kt::StringAttr("mode", "cubic"), kt::StringAttr("padding_mode", padding)});
    runtime::Tensor img = FloatTensor(DataType::kFloat32, {1, 13, 7, 11}, Uniform(13 * 7 * 11, 3, -1, 1));
    runtime::Tensor g = FloatTensor(DataType::kFloat32, {1, 3, 5, 2}, Uniform(30, 4, -7, 7));
    SCOPED_TRACE(padding);
    ExpectMatchesCpu(far, 20, {&img, &g}, 1e-5);
  }
}

// ---------------------------------------------------------------- AffineGrid

TEST(CudaVision, AffineGrid2dAnd3d) {
  VIGIL_SKIP_WITHOUT_CUDA();
  struct Case {
    std::vector<int64_t> theta, size;
  };
  const Case cases[] = {{{3, 2, 3}, {3, 13, 7, 11}}, {{2, 3, 4}, {2, 5, 4, 6, 5}}, {{2, 2, 3}, {2, 1, 1, 9}},
                        {{1, 3, 4}, {1, 2, 1, 7, 1}}};
  for (const Case& c : cases) {
    for (int64_t align : {0, 1}) {
      for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16}) {
        SCOPED_TRACE(::testing::Message() << "AffineGrid theta " << ::testing::PrintToString(c.theta) << " size "
                                          << ::testing::PrintToString(c.size) << " " << ir::DataTypeName(t)
                                          << " align_corners " << align);
        ir::Node node = kt::MakeNode("AffineGrid", {"theta", "size"}, {"grid"}, {kt::IntAttr("align_corners", align)});
        runtime::Tensor theta = FloatTensor(t, c.theta, Uniform(Count(c.theta), 9, -1.5f, 1.5f));
        runtime::Tensor size = kt::I64({static_cast<int64_t>(c.size.size())}, c.size);
        ExpectMatchesCpu(node, 20, {&theta, &size}, Tolerance(t), /*host_mask=*/1u << 1);
      }
    }
  }
}

// ---------------------------------------------------------------- RoiAlign

// 127 rois over a 7x11 map (scaled by `scale`): mostly inside, some reaching
// past the edges, some inverted (x2 < x1) and some tiny.
std::vector<float> Rois(int64_t count, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> ux(-2.0f, 12.0f), uy(-2.0f, 8.0f), len(0.0f, 6.0f);
  std::vector<float> v;
  for (int64_t i = 0; i < count; ++i) {
    float x1 = ux(rng), y1 = uy(rng), x2 = x1 + len(rng), y2 = y1 + len(rng);
    if (i % 9 == 4) std::swap(x1, x2);
    if (i % 11 == 5) y2 = y1 + 0.1f;
    v.insert(v.end(), {x1 / scale, y1 / scale, x2 / scale, y2 / scale});
  }
  return v;
}

void CheckRoiAlign(DataType t, int64_t opset, const std::string& mode, const std::string& coords, int64_t ratio,
                   float scale) {
  SCOPED_TRACE(::testing::Message() << "RoiAlign-" << opset << " " << ir::DataTypeName(t) << " mode " << mode
                                    << " coordinate_transformation_mode " << coords << " sampling_ratio " << ratio
                                    << " spatial_scale " << scale);
  std::vector<ir::Attribute> attrs = {kt::StringAttr("mode", mode), kt::IntAttr("output_height", 5),
                                      kt::IntAttr("output_width", 4), kt::IntAttr("sampling_ratio", ratio),
                                      kt::FloatAttr("spatial_scale", scale)};
  if (opset >= 16) attrs.push_back(kt::StringAttr("coordinate_transformation_mode", coords));
  ir::Node node = kt::MakeNode("RoiAlign", {"x", "rois", "batch_indices"}, {"y"}, attrs);
  const int64_t rois = 127;
  runtime::Tensor x = FloatTensor(t, {3, 13, 7, 11}, Uniform(3 * 13 * 7 * 11, 21, -2, 2));
  runtime::Tensor boxes = FloatTensor(t, {rois, 4}, Rois(rois, 8, scale));
  std::vector<int64_t> batch(rois);
  for (int64_t i = 0; i < rois; ++i) batch[i] = (i * 5 + 1) % 3;
  runtime::Tensor indices = kt::I64({rois}, batch);
  ExpectMatchesCpu(node, opset, {&x, &boxes, &indices}, Tolerance(t));
}

TEST(CudaVision, RoiAlignModesAndCoordinateTransforms) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (DataType t : {DataType::kFloat32, DataType::kFloat16}) {
    for (const char* mode : {"avg", "max"}) {
      for (const char* coords : {"half_pixel", "output_half_pixel"}) {
        for (int64_t ratio : {0, 2}) CheckRoiAlign(t, 16, mode, coords, ratio, 1.0f);
      }
      CheckRoiAlign(t, 10, mode, "", 0, 0.5f);
      CheckRoiAlign(t, 16, mode, "half_pixel", 0, 0.25f);
    }
  }
  CheckRoiAlign(DataType::kBfloat16, 16, "avg", "half_pixel", 0, 1.0f);
}

TEST(CudaVision, RoiAlignInt32BatchIndices) {
  VIGIL_SKIP_WITHOUT_CUDA();
  ir::Node node = kt::MakeNode("RoiAlign", {"x", "rois", "batch_indices"}, {"y"},
                               {kt::StringAttr("mode", "max"), kt::IntAttr("output_height", 3),
                                kt::IntAttr("output_width", 2)});
  runtime::Tensor x = FloatTensor(DataType::kFloat32, {3, 13, 7, 11}, Uniform(3 * 13 * 7 * 11, 5, -2, 2));
  runtime::Tensor rois = FloatTensor(DataType::kFloat32, {13, 4}, Rois(13, 3, 1.0f));
  runtime::Tensor indices = kt::MakeTensor<int32_t>(DataType::kInt32, {13}, {2, 0, 1, 1, 2, 0, 0, 2, 1, 1, 0, 2, 2});
  ExpectMatchesCpu(node, 16, {&x, &rois, &indices}, 1e-5);
}

TEST(CudaVision, RoiAlignBatchIndexOutOfRangeGivesNaNAndReadsNothing) {
  VIGIL_SKIP_WITHOUT_CUDA();
  // The CPU fails the run; the CUDA kernel keeps batch_indices on the device
  // and marks that roi's outputs NaN instead (docs/cuda.md).
  ir::Node node = kt::MakeNode("RoiAlign", {"x", "rois", "batch_indices"}, {"y"},
                               {kt::IntAttr("output_height", 2), kt::IntAttr("output_width", 3)});
  runtime::Tensor x = FloatTensor(DataType::kFloat32, {2, 3, 7, 11}, Uniform(2 * 3 * 7 * 11, 2, -1, 1));
  runtime::Tensor rois = FloatTensor(DataType::kFloat32, {3, 4}, {0, 0, 5, 5, 1, 1, 4, 6, 2, 0, 9, 6});
  runtime::Tensor indices = kt::I64({3}, {1, 1 << 30, -1});
  auto got = RunOnCuda(node, 16, {&x, &rois, &indices});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const float* y = (*got)[0].data<float>();
  for (int i = 0; i < 3 * 3 * 2 * 3; ++i) {
    const bool bad = i >= 3 * 2 * 3;
    EXPECT_EQ(std::isnan(y[i]), bad) << "element " << i << " is " << y[i];
  }
  // The first roi alone matches the CPU.
  runtime::Tensor one_roi = FloatTensor(DataType::kFloat32, {1, 4}, {0, 0, 5, 5});
  runtime::Tensor one_index = kt::I64({1}, {1});
  ExpectMatchesCpu(node, 16, {&x, &one_roi, &one_index}, 1e-5);
}

// ---------------------------------------------------------------- NonMaxSuppression

struct NmsCase {
  int64_t batches = 2, classes = 3, boxes = 127;
  int64_t center_point_box = 0;
  int64_t max_output = 5;   // < 0: input omitted
  float iou = 0.5f;          // < 0: input omitted
  float score = 0.3f;        // < -1: input omitted
  bool nan_scores = false;
};

// Boxes clustered so that many overlap; corners flipped on some; scores on a
// coarse grid so that many tie.
void NmsInputs(const NmsCase& c, runtime::Tensor* boxes, runtime::Tensor* scores) {
  std::mt19937 rng(static_cast<uint32_t>(c.boxes * 31 + c.classes));
  std::uniform_real_distribution<float> pos(0.0f, 20.0f), len(1.0f, 8.0f), u(0.0f, 1.0f);
  std::vector<float> b;
  for (int64_t n = 0; n < c.batches * c.boxes; ++n) {
    float y = pos(rng), x = pos(rng), h = len(rng), w = len(rng);
    if (c.center_point_box) {
      b.insert(b.end(), {x, y, w, h});
    } else if (n % 3 == 1) {
      b.insert(b.end(), {y + h, x + w, y, x});  // flipped corners
    } else if (n % 5 == 2) {
      b.insert(b.end(), {y, x + w, y + h, x});  // one axis flipped
    } else {
      b.insert(b.end(), {y, x, y + h, x + w});
    }
  }
  std::vector<float> s;
  for (int64_t n = 0; n < c.batches * c.classes * c.boxes; ++n) {
    float v = std::floor(u(rng) * 8.0f) / 8.0f;  // 8 levels: ties
    if (c.nan_scores && n % 13 == 6) v = NAN;
    s.push_back(v);
  }
  *boxes = kt::F32({c.batches, c.boxes, 4}, b);
  *scores = kt::F32({c.batches, c.classes, c.boxes}, s);
}

void CheckNms(const NmsCase& c) {
  SCOPED_TRACE(::testing::Message() << "NonMaxSuppression batches " << c.batches << " classes " << c.classes
                                    << " boxes " << c.boxes << " center_point_box " << c.center_point_box
                                    << " max_output " << c.max_output << " iou " << c.iou << " score " << c.score
                                    << (c.nan_scores ? " NaN scores" : ""));
  runtime::Tensor boxes, scores;
  NmsInputs(c, &boxes, &scores);
  runtime::Tensor max_output = kt::I64({1}, {c.max_output});
  runtime::Tensor iou = kt::F32({1}, {c.iou});
  runtime::Tensor score = kt::F32({1}, {c.score});
  std::vector<std::string> names = {"boxes", "scores", c.max_output >= 0 ? "max" : "", c.iou >= 0 ? "iou" : "",
                                    c.score >= -1 ? "score" : ""};
  while (!names.empty() && names.back().empty()) names.pop_back();
  std::vector<const runtime::Tensor*> inputs = {&boxes, &scores, c.max_output >= 0 ? &max_output : nullptr,
                                                c.iou >= 0 ? &iou : nullptr, c.score >= -1 ? &score : nullptr};
  inputs.resize(names.size());
  ir::Node node = kt::MakeNode("NonMaxSuppression", names, {"selected"},
                               {kt::IntAttr("center_point_box", c.center_point_box)});
  ExpectMatchesCpu(node, 11, inputs, 0, /*host_mask=*/(1u << 2) | (1u << 3) | (1u << 4));
  // The selection is not empty where it should not be (a test that cannot
  // fail by selecting nothing on both sides).
  auto want = kt::RunKernel(node, 11, inputs);
  ASSERT_TRUE(want.ok());
  if (c.max_output > 0) {
    EXPECT_GT((*want)[0].dim(0), 0);
  }
}

TEST(CudaVision, NonMaxSuppressionMatchesCpuExactly) {
  VIGIL_SKIP_WITHOUT_CUDA();
  CheckNms({});
  CheckNms({.center_point_box = 1});
  CheckNms({.max_output = 0});
  CheckNms({.max_output = 1000, .iou = 0.3f});
  CheckNms({.max_output = 1000, .iou = 0.0f, .score = -2.0f});  // no score threshold; any overlap suppresses
  CheckNms({.max_output = 1000, .iou = 1.0f, .score = 0.0f});   // nothing suppressed
  CheckNms({.max_output = 7, .iou = -1.0f});                     // iou_threshold omitted (0)
  CheckNms({.max_output = 1000, .score = -2.0f, .nan_scores = true});
  CheckNms({.batches = 1, .classes = 1, .boxes = 1, .max_output = 3});
  CheckNms({.batches = 3, .classes = 13, .boxes = 300, .max_output = 50, .iou = 0.45f, .score = 0.1f});
  CheckNms({.batches = 1, .classes = 2, .boxes = 2000, .max_output = 100000, .iou = 0.6f, .score = -2.0f});
}

TEST(CudaVision, NonMaxSuppressionIdenticalBoxesKeepTheFirst) {
  VIGIL_SKIP_WITHOUT_CUDA();
  // Equal scores: box order decides; identical boxes suppress each other.
  runtime::Tensor boxes = kt::F32({1, 5, 4}, {0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 5, 5, 6, 6, 0.5f, 0, 1.5f, 1});
  runtime::Tensor scores = kt::F32({1, 1, 5}, {0.5f, 0.5f, 0.9f, 0.5f, 0.5f});
  runtime::Tensor max_output = kt::I64({1}, {10});
  runtime::Tensor iou = kt::F32({1}, {0.3f});
  ir::Node node = kt::MakeNode("NonMaxSuppression", {"boxes", "scores", "max", "iou"}, {"selected"});
  auto got = RunOnCuda(node, 11, {&boxes, &scores, &max_output, &iou}, (1u << 2) | (1u << 3));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  // Box 2 (0.9) first; 0 and 1 (flipped) are the same box and go; 3 stays;
  // 4 overlaps box 2 by 1/3 > 0.3 and goes.
  EXPECT_EQ(kt::Values<int64_t>((*got)[0]), (std::vector<int64_t>{0, 0, 2, 0, 0, 3}));
  ExpectMatchesCpu(node, 11, {&boxes, &scores, &max_output, &iou}, 0, (1u << 2) | (1u << 3));
}

TEST(CudaVision, NonMaxSuppressionThroughASession) {
  VIGIL_SKIP_WITHOUT_CUDA();
  // The output's row count is known only at run time: the session sizes it
  // from what the kernel allocates.
  NmsCase c;
  runtime::Tensor boxes, scores;
  NmsInputs(c, &boxes, &scores);
  NodeCase nc = MakeCase("NonMaxSuppression",
                         {boxes, scores, kt::I64({1}, {4}), kt::F32({1}, {0.5f}), kt::F32({1}, {0.25f})},
                         {kt::IntAttr("center_point_box", 0)}, 11, {false, false, true, true, true});
  ExpectCudaMatchesCpu(nc, 0);
}

TEST(CudaVision, NonMaxSuppressionIsNotRecordedIntoACudaGraph) {
  VIGIL_SKIP_WITHOUT_CUDA();
  // It reads its row count back to the host; a recording is refused cleanly
  // and the run goes node by node, with the same result, every time.
  NmsCase c;
  runtime::Tensor boxes, scores;
  NmsInputs(c, &boxes, &scores);
  NodeCase nc = MakeCase("NonMaxSuppression",
                         {boxes, scores, kt::I64({1}, {4}), kt::F32({1}, {0.5f}), kt::F32({1}, {0.25f})},
                         {kt::IntAttr("center_point_box", 0)}, 11, {false, false, true, true, true});
  runtime::SessionOptions options;
  options.backends = {CudaBackendForTests(), cpu::MakeCpuBackend()};
  options.no_fallback = true;
  options.constant_folding = false;
  options.device_graphs = true;
  auto session = runtime::Session::Create(OneNodeModel(nc), options);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  auto want = RunOn(nc, {cpu::MakeCpuBackend()}, false);
  ASSERT_EQ(want.size(), 1u);
  for (int run = 0; run < 3; ++run) {
    auto got = (*session)->Run(Bindings(nc));
    ASSERT_TRUE(got.ok()) << "run " << run << ": " << got.status().ToString();
    ASSERT_EQ(got->size(), 1u);
    runtime::TensorComparison cmp = runtime::CompareTensors(want[0].tensor, (*got)[0].tensor, 0, 0);
    EXPECT_TRUE(cmp.same_shape && cmp.mismatches == 0) << "run " << run << ": " << cmp.Describe();
  }
  std::string notes;
  for (const std::string& n : (*session)->DeviceGraphNotes()) notes += n + "\n";
  EXPECT_NE(notes.find("not used"), std::string::npos) << notes;
  std::cout << "device graph notes: " << notes;
}

// Not a check: how long NonMaxSuppression takes at a YOLO-like size (1
// batch, 80 classes, 8400 boxes), on the GPU and on the CPU: with a score
// threshold above every score (0.9; scores are multiples of 1/8 below 1) and
// with none. Run with --gtest_also_run_disabled_tests.
TEST(CudaVision, DISABLED_NonMaxSuppressionTiming) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (float score_threshold : {0.9f, -2.0f}) {
    NmsCase c{.batches = 1, .classes = 80, .boxes = 8400, .max_output = 100, .iou = 0.5f, .score = score_threshold};
    runtime::Tensor boxes, scores;
    NmsInputs(c, &boxes, &scores);
    runtime::Tensor max_output = kt::I64({1}, {c.max_output});
    runtime::Tensor iou = kt::F32({1}, {c.iou});
    runtime::Tensor score = kt::F32({1}, {c.score});
    std::vector<const runtime::Tensor*> inputs = {&boxes, &scores, &max_output, &iou};
    std::vector<std::string> names = {"boxes", "scores", "max", "iou"};
    if (c.score >= -1) {
      inputs.push_back(&score);
      names.push_back("score");
    }
    ir::Node node = kt::MakeNode("NonMaxSuppression", names, {"selected"});
    for (int rep = 0; rep < 3; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      auto got = RunOnCuda(node, 11, inputs, (1u << 2) | (1u << 3) | (1u << 4));
      auto t1 = std::chrono::steady_clock::now();
      auto want = kt::RunKernel(node, 11, inputs);
      auto t2 = std::chrono::steady_clock::now();
      ASSERT_TRUE(got.ok() && want.ok());
      std::cout << "score_threshold " << c.score << ": cuda (with copies) "
                << std::chrono::duration<double, std::milli>(t1 - t0).count() << " ms, cpu "
                << std::chrono::duration<double, std::milli>(t2 - t1).count() << " ms, " << (*want)[0].dim(0)
                << " rows\n";
    }
  }
}

// ---------------------------------------------------------------- support

TEST(CudaVision, RefusedNodesSayWhy) {
  VIGIL_SKIP_WITHOUT_CUDA();
  auto backend = CudaBackendForTests();
  auto check = [&](const ir::Node& node, int64_t opset, std::vector<ir::TypeInfo> in, const std::string& expect) {
    std::vector<const ir::TypeInfo*> ptrs;
    for (const ir::TypeInfo& t : in) ptrs.push_back(&t);
    runtime::NodeTypes types{ptrs, {}};
    std::string why;
    EXPECT_FALSE(backend->SupportsTyped(node, opset, types, &why)) << node.op_type;
    EXPECT_NE(why.find(expect), std::string::npos) << node.op_type << ": " << why;
  };
  check(kt::MakeNode("GridSample", {"x", "g"}, {"y"}), 20,
        {ops::TensorType(DataType::kFloat64, {1, 1, 2, 2}), ops::TensorType(DataType::kFloat64, {1, 2, 2, 2})},
        "dtype float64 of input 0");
  check(kt::MakeNode("GridSample", {"x", "g"}, {"y"}), 20,
        {ops::TensorType(DataType::kFloat32, {1, 1, 2, 2, 2, 2}), ops::TensorType(DataType::kFloat32, {1, 2, 2, 2, 2, 4})},
        "4 spatial dims");
  check(kt::MakeNode("NonMaxSuppression", {"b", "s"}, {"y"}), 11,
        {ops::TensorType(DataType::kFloat16, {1, 2, 4}), ops::TensorType(DataType::kFloat16, {1, 1, 2})},
        "dtype float16 of input 0");
  check(kt::MakeNode("RoiAlign", {"x", "r", "i"}, {"y"}), 16,
        {ops::TensorType(DataType::kFloat64, {1, 1, 2, 2}), ops::TensorType(DataType::kFloat64, {1, 4}),
         ops::TensorType(DataType::kInt64, std::vector<int64_t>{1})},
        "dtype float64 of input 0");
}

}  // namespace
}  // namespace vigil::cuda::testing
