// Input validation: one test per case, checking the summary, the facts and
// the ranked causes. No test passes a buffer that could be read past: every
// buffer is allocated with exactly the byte size it is bound with, so under
// AddressSanitizer any read of the caller's data beyond it would fail.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <variant>

#include "runtime/input_binding.h"

namespace vigil::runtime {
namespace {

using ir::DataType;
using DimSpec = std::variant<int64_t, std::string>;

ir::ValueInfo Input(const std::string& name, DataType dtype, std::vector<DimSpec> dims) {
  ir::ValueInfo vi;
  vi.name = name;
  vi.has_type = true;
  vi.type.kind = ir::TypeInfo::Kind::kTensor;
  vi.type.elem_type = dtype;
  vi.type.shape.rank_known = true;
  for (const DimSpec& d : dims) {
    if (std::holds_alternative<int64_t>(d)) vi.type.shape.dims.push_back(ir::Dim::Known(std::get<int64_t>(d)));
    else vi.type.shape.dims.push_back(ir::Dim::Symbolic(std::get<std::string>(d)));
  }
  return vi;
}

// A buffer of exactly `bytes` bytes, kept alive by the test.
struct Buffer {
  explicit Buffer(size_t bytes) : data(new uint8_t[bytes == 0 ? 1 : bytes]), size(bytes) {}
  std::unique_ptr<uint8_t[]> data;
  size_t size;
};

std::vector<std::unique_ptr<Buffer>> g_buffers;

InputBinding Bind(const std::string& name, DataType dtype, std::vector<int64_t> shape, size_t byte_size) {
  auto buffer = std::make_unique<Buffer>(byte_size);
  InputBinding b{name, dtype, std::move(shape), buffer->data.get(), byte_size, "test"};
  g_buffers.push_back(std::move(buffer));
  return b;
}

// The exact byte size for the shape.
InputBinding BindExact(const std::string& name, DataType dtype, std::vector<int64_t> shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return Bind(name, dtype, shape, static_cast<size_t>(n * static_cast<uint64_t>(ir::DataTypeBits(dtype) / 8)));
}

std::string FactOf(const Status& s, const std::string& name) {
  for (const Fact& f : s.diagnosis().facts) {
    if (f.name == name) return f.value;
  }
  return "(no fact '" + name + "')";
}

std::string AllCauses(const Status& s) {
  std::string out;
  for (const Cause& c : s.diagnosis().causes) out += c.what + " | " + c.evidence + "\n";
  return out;
}

std::string FirstCause(const Status& s) {
  return s.diagnosis().causes.empty() ? std::string() : s.diagnosis().causes[0].what;
}

ModelInputs OneImageInput() { return ModelInputs{{Input("image", DataType::kFloat32, {1, 3, 224, 224})}, {}}; }

Status Validate(const ModelInputs& m, std::vector<InputBinding> bindings) {
  return ValidateInputs(m, bindings).status();
}

TEST(ListModelInputs, InitializersMakeInputsOptional) {
  ir::Graph g;
  g.inputs = {Input("x", DataType::kFloat32, {1}), Input("w", DataType::kFloat32, {1}),
              Input("y", DataType::kFloat32, {1})};
  ir::Tensor w;
  w.name = "w";
  g.initializers.push_back(w);
  ModelInputs m = ListModelInputs(g);
  ASSERT_EQ(m.required.size(), 2u);
  EXPECT_EQ(m.required[0].name, "x");
  EXPECT_EQ(m.required[1].name, "y");
  ASSERT_EQ(m.optional.size(), 1u);
  EXPECT_EQ(m.optional[0].name, "w");
}

TEST(ValidateInputs, AcceptsMatchingInputAndBindsSymbols) {
  ModelInputs m{{Input("x", DataType::kFloat32, {"N", 3, "L"})}, {}};
  std::vector<InputBinding> b = {BindExact("x", DataType::kFloat32, {8, 3, 5})};
  auto dims = ValidateInputs(m, b);
  ASSERT_TRUE(dims.ok()) << dims.status().ToString();
  EXPECT_EQ(dims->at("N"), 8);
  EXPECT_EQ(dims->at("L"), 5);
}

TEST(ValidateInputs, UnknownNameSuggestsClosestAndListsInputs) {
  ModelInputs m{{Input("images", DataType::kFloat32, {1, 3}), Input("mask", DataType::kBool, {1})}, {}};
  Status s = Validate(m, {BindExact("image", DataType::kFloat32, {1, 3})});
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(s.summary(), "input 'image' is not an input of the model");
  EXPECT_EQ(FactOf(s, "model inputs"), "images: float32[1,3], mask: bool[1]");
  EXPECT_EQ(FirstCause(s), "a misspelling of 'images'");
}

TEST(ValidateInputs, MissingRequiredInput) {
  ModelInputs m{{Input("a", DataType::kFloat32, {1}), Input("b", DataType::kFloat32, {1})}, {}};
  Status s = Validate(m, {BindExact("a", DataType::kFloat32, {1})});
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(s.summary(), "input 'b' is required but not given");
  EXPECT_EQ(FactOf(s, "given inputs"), "'a'");
  EXPECT_EQ(FactOf(s, "expected"), "float32[1]");
}

TEST(ValidateInputs, OptionalInputMayBeOmittedOrGiven) {
  ModelInputs m{{Input("a", DataType::kFloat32, {1})}, {Input("w", DataType::kFloat32, {2})}};
  EXPECT_TRUE(Validate(m, {BindExact("a", DataType::kFloat32, {1})}).ok());
  EXPECT_TRUE(Validate(m, {BindExact("a", DataType::kFloat32, {1}), BindExact("w", DataType::kFloat32, {2})}).ok());
}

TEST(ValidateInputs, SameInputBoundTwice) {
  ModelInputs m{{Input("a", DataType::kFloat32, {1})}, {}};
  Status s = Validate(m, {BindExact("a", DataType::kFloat32, {1}), BindExact("a", DataType::kFloat32, {1})});
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(s.summary(), "input 'a' is bound twice (bindings #1 and #2)");
}

TEST(ValidateInputs, PositionalBindingsTakeModelOrderAndAreNamed) {
  ModelInputs m{{Input("a", DataType::kFloat32, {1}), Input("b", DataType::kInt64, {2})},
                {Input("w", DataType::kFloat32, {3})}};
  std::vector<InputBinding> b = {BindExact("", DataType::kFloat32, {1}), BindExact("", DataType::kInt64, {2})};
  ASSERT_TRUE(ValidateInputs(m, b).ok());
  EXPECT_EQ(b[0].name, "a");
  EXPECT_EQ(b[1].name, "b");
  // Named bindings take their slot; positional ones fill the rest in order.
  std::vector<InputBinding> mixed = {BindExact("a", DataType::kFloat32, {1}), BindExact("", DataType::kInt64, {2})};
  ASSERT_TRUE(ValidateInputs(m, mixed).ok());
  EXPECT_EQ(mixed[1].name, "b");
}

TEST(ValidateInputs, MorePositionalInputsThanTheModelHas) {
  ModelInputs m{{Input("a", DataType::kFloat32, {1})}, {}};
  Status s = Validate(m, {BindExact("", DataType::kFloat32, {1}), BindExact("", DataType::kFloat32, {1})});
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(s.summary(), "2 inputs given by position, but the model has 1 input");
  EXPECT_EQ(FactOf(s, "model inputs"), "a: float32[1]");
}

TEST(ValidateInputs, DtypeOfSameSize) {
  ModelInputs m{{Input("x", DataType::kFloat32, {2})}, {}};
  Status s = Validate(m, {BindExact("x", DataType::kInt32, {2})});
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(s.summary(), "input 'x' has dtype int32, the model expects float32");
  EXPECT_EQ(FactOf(s, "expected"), "float32[2]");
  EXPECT_EQ(FactOf(s, "got"), "int32[2]");
  EXPECT_EQ(FirstCause(s), "input 'x' is int32 where float32 is expected, a type of the same size: the bytes may be right but the "
            "type wrong");
}

TEST(ValidateInputs, Float64IsNumpysDefault) {
  ModelInputs m{{Input("x", DataType::kFloat32, {2})}, {}};
  Status s = Validate(m, {BindExact("x", DataType::kFloat64, {2})});
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(s.summary(), "input 'x' has dtype float64, the model expects float32");
  EXPECT_EQ(FirstCause(s), "input 'x' is float64 where float32 is expected: numpy's default dtype");
  EXPECT_EQ(s.diagnosis().fixes.at(0), "convert before saving: x.astype(np.float32)");
}

TEST(ValidateInputs, Int64WhereInt32Expected) {
  ModelInputs m{{Input("ids", DataType::kInt32, {4})}, {}};
  Status s = Validate(m, {BindExact("ids", DataType::kInt64, {4})});
  EXPECT_EQ(FirstCause(s), "input 'ids' is int64 where int32 is expected: numpy's default integer dtype");
}

TEST(ValidateInputs, Uint8PixelsWhereFloatExpected) {
  Status s = Validate(OneImageInput(), {BindExact("image", DataType::kUint8, {1, 3, 224, 224})});
  EXPECT_EQ(FirstCause(s), "input 'image' is uint8, raw image pixels; the model expects float32");
}

TEST(ValidateInputs, RankMismatchWithMissingBatchDim) {
  Status s = Validate(OneImageInput(), {BindExact("image", DataType::kFloat32, {3, 224, 224})});
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(s.summary(), "input 'image' has rank 3 [3,224,224], the model expects rank 4 [1,3,224,224]");
  EXPECT_EQ(FirstCause(s), "the batch dim is missing");
}

TEST(ValidateInputs, RankMismatchWithExtraLeadingDim) {
  Status s = Validate(OneImageInput(), {BindExact("image", DataType::kFloat32, {1, 1, 3, 224, 224})});
  EXPECT_EQ(FirstCause(s), "an extra leading dim of 1");
}

TEST(ValidateInputs, DimMismatchNhwcGivenToNchw) {
  Status s = Validate(OneImageInput(), {BindExact("image", DataType::kFloat32, {1, 224, 224, 3})});
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(s.summary(),
            "input 'image' dim 1 is 224, the model expects 3 (shape [1,224,224,3], expected [1,3,224,224])");
  EXPECT_EQ(FactOf(s, "input"), "image");
  EXPECT_EQ(FactOf(s, "expected"), "float32[1,3,224,224]");
  EXPECT_EQ(FactOf(s, "got"), "float32[1,224,224,3]");
  EXPECT_EQ(FirstCause(s), "input 'image' [1,224,224,3] looks like an NHWC image; the model takes NCHW [1,3,224,224]");
  EXPECT_NE(s.diagnosis().fixes.at(0).find("np.transpose(x, (0, 3, 1, 2))"), std::string::npos);
}

TEST(ValidateInputs, DimMismatchNchwGivenToNhwcWithSymbolicBatch) {
  ModelInputs m{{Input("image", DataType::kFloat32, {"N", 224, 224, 3})}, {}};
  Status s = Validate(m, {BindExact("image", DataType::kFloat32, {2, 3, 224, 224})});
  EXPECT_EQ(FirstCause(s), "input 'image' [2,3,224,224] looks like an NCHW image; the model takes NHWC [N,224,224,3]");
}

TEST(ValidateInputs, DimMismatchWithoutLayoutCause) {
  ModelInputs m{{Input("tokens", DataType::kInt64, {1, 128})}, {}};
  Status s = Validate(m, {BindExact("tokens", DataType::kInt64, {1, 64})});
  EXPECT_EQ(s.summary(), "input 'tokens' dim 1 is 64, the model expects 128 (shape [1,64], expected [1,128])");
  EXPECT_NE(FirstCause(s).find("another model or another size"), std::string::npos);
}

TEST(ValidateInputs, DimThatIsBytesNotElements) {
  ModelInputs m{{Input("x", DataType::kFloat32, {1, 100})}, {}};
  Status s = Validate(m, {BindExact("x", DataType::kFloat32, {1, 400})});
  EXPECT_EQ(FirstCause(s), "dim 1 is 4× too large: bytes passed as elements?");
}

TEST(ValidateInputs, SymbolicDimInconsistentAcrossInputs) {
  ModelInputs m{{Input("a", DataType::kFloat32, {"N", 3}), Input("b", DataType::kFloat32, {"N", 5})}, {}};
  Status s = Validate(m, {BindExact("a", DataType::kFloat32, {8, 3}), BindExact("b", DataType::kFloat32, {4, 5})});
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(s.summary(), "'N' is 8 in input 'a' but 4 in input 'b'");
  EXPECT_EQ(FactOf(s, "symbolic dim"), "N");
  EXPECT_EQ(FactOf(s, "input"), "b");
}

// A name shared by two dims of one input (a square image): the fix is about
// that input, not "both inputs".
TEST(ValidateInputs, SymbolicDimInconsistentWithinOneInput) {
  ModelInputs m{{Input("image", DataType::kFloat32, {1, 3, "S", "S"})}, {}};
  Status s = Validate(m, {BindExact("image", DataType::kFloat32, {1, 3, 480, 640})});
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(s.summary(), "input 'image' has dims 2 and 3 both named 'S', but they are 480 and 640");
  EXPECT_EQ(FactOf(s, "symbolic dim"), "S");
  EXPECT_EQ(FirstCause(s), "the model says dims 2 and 3 of input 'image' are the same size 'S' (e.g. a square image)");
  ASSERT_FALSE(s.diagnosis().fixes.empty());
  EXPECT_EQ(s.diagnosis().fixes[0],
            "give input 'image' equal dims 2 and 3 (resize or pad to 480 × 480), or re-export the model with a "
            "separate name for each dim");
}

// Seed 003: an image buffer of channels*width*height elements (3*640*480) bound
// to an input [1,3,224,224], whose element count was computed from the image.
TEST(ValidateInputs, SeedCaseImageBufferOfAnotherSize) {
  const size_t elements = 3 * 640 * 480;
  Status s = Validate(OneImageInput(), {Bind("image", DataType::kFloat32, {1, 3, 224, 224}, elements * 4)});
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(s.summary(),
            "input 'image' buffer holds 921600 float32 elements (3686400 bytes), but its shape [1,3,224,224] "
            "needs 150528 (602112 bytes)");
  EXPECT_EQ(FactOf(s, "input"), "image");
  EXPECT_EQ(FactOf(s, "expected elements"), "150528");
  EXPECT_EQ(FactOf(s, "given elements"), "921600");
  EXPECT_EQ(FirstCause(s), "input 'image': the buffer holds channels*height*width elements of a 640 × 480 image, the shape says "
            "224 × 224");
  EXPECT_NE(s.diagnosis().causes[0].evidence.find("921600 = 3 × 640 × 480"), std::string::npos) << AllCauses(s);
}

// The same buffer given flat, [921600]: the rank is wrong, and why.
TEST(ValidateInputs, SeedCaseBufferGivenFlat) {
  Status s = Validate(OneImageInput(), {BindExact("image", DataType::kFloat32, {3 * 640 * 480})});
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(FirstCause(s).find("the pixels of a 640 × 480 image: 921600 values = 3 × 640 × 480, the model takes "
                               "224 × 224 (150528 values)"),
            std::string::npos)
      << AllCauses(s);
  // A flat buffer of the right count is only in the wrong shape.
  Status flat = Validate(OneImageInput(), {BindExact("image", DataType::kFloat32, {3 * 224 * 224})});
  EXPECT_EQ(FirstCause(flat), "input 'image' holds all the values, in another shape: a flat buffer?") << AllCauses(flat);
  ASSERT_FALSE(flat.diagnosis().fixes.empty());
  EXPECT_EQ(flat.diagnosis().fixes[0], "reshape it: x.reshape(1, 3, 224, 224)");
}

TEST(ValidateInputs, BufferSmallerThanShapeWouldOverrun) {
  // The reverse of the seed: a 224×224 image's buffer bound with the shape of a 640×480 one.
  ModelInputs m{{Input("image", DataType::kFloat32, {1, 3, "H", "W"})}, {}};
  Status s = Validate(m, {Bind("image", DataType::kFloat32, {1, 3, 480, 640}, 150528 * 4)});
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(FactOf(s, "expected elements"), "921600");
  EXPECT_EQ(FactOf(s, "given elements"), "150528");
  EXPECT_NE(AllCauses(s).find("the buffer is smaller than the shape: reading it would overrun the caller's memory "
                              "(this is the access violation ONNX Runtime users hit in "
                              "GPUDataTransfer::CopyTensorAsync)"),
            std::string::npos)
      << AllCauses(s);
}

TEST(ValidateInputs, ByteSizeIsElementSizeTimesTooLarge) {
  ModelInputs m{{Input("x", DataType::kFloat32, {10})}, {}};
  Status s = Validate(m, {Bind("x", DataType::kFloat32, {10}, 160)});
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(FirstCause(s), "the element count is 4× too large: bytes passed as elements?");
  EXPECT_EQ(s.diagnosis().causes.size(), 1u) << AllCauses(s);
}

TEST(ValidateInputs, ShapeCountsBytesAsElements) {
  // A shape built from size() * sizeof(int32_t) (onnxruntime#12300).
  ModelInputs m{{Input("ids", DataType::kInt32, {"L"})}, {}};
  Status s = Validate(m, {Bind("ids", DataType::kInt32, {40}, 40)});
  EXPECT_EQ(FirstCause(s), "the shape counts 4× the elements the buffer holds: bytes passed as elements?");
}

TEST(ValidateInputs, BufferOfAnotherElementSize) {
  ModelInputs m{{Input("x", DataType::kFloat32, {6})}, {}};
  Status s = Validate(m, {Bind("x", DataType::kFloat32, {6}, 48)});
  EXPECT_EQ(FirstCause(s), "the buffer holds 6 elements of 8 byte(s) each, not float32: data of another dtype "
                           "described as float32?");
}

TEST(ValidateInputs, NullDataForNonEmptyTensor) {
  ModelInputs m{{Input("x", DataType::kFloat32, {2, 3})}, {}};
  std::vector<InputBinding> b = {InputBinding{"x", DataType::kFloat32, {2, 3}, nullptr, 24, ""}};
  Status s = ValidateInputs(m, b).status();
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(s.summary(), "input 'x' has shape [2,3] (24 bytes) but no data (a null pointer)");
}

TEST(ValidateInputs, NullDataForEmptyTensorIsFine) {
  ModelInputs m{{Input("x", DataType::kFloat32, {"N", 3})}, {}};
  std::vector<InputBinding> b = {InputBinding{"x", DataType::kFloat32, {0, 3}, nullptr, 0, ""}};
  EXPECT_TRUE(ValidateInputs(m, b).ok());
}

TEST(ValidateInputs, NegativeDim) {
  ModelInputs m{{Input("x", DataType::kFloat32, {"N", 3})}, {}};
  std::vector<InputBinding> b = {InputBinding{"x", DataType::kFloat32, {-1, 3}, nullptr, 0, ""}};
  Status s = ValidateInputs(m, b).status();
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(s.summary(), "input 'x' has negative dim -1 at index 0 in shape [-1,3]");
}

TEST(ValidateInputs, OverflowingShape) {
  ModelInputs m{{Input("x", DataType::kFloat32, {"A", "B"})}, {}};
  std::vector<InputBinding> b = {
      InputBinding{"x", DataType::kFloat32, {int64_t{1} << 40, int64_t{1} << 40}, nullptr, 0, ""}};
  Status s = ValidateInputs(m, b).status();
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_EQ(s.summary(), "input 'x': the element count of shape [1099511627776,1099511627776] overflows 64 bits");
}

TEST(ValidateInputs, UntypedModelInputAcceptsAnyTensor) {
  ir::ValueInfo vi;
  vi.name = "x";
  ModelInputs m{{vi}, {}};
  EXPECT_TRUE(Validate(m, {BindExact("x", DataType::kInt16, {2, 2})}).ok());
}

TEST(ValidateInputs, UnknownRankAcceptsAnyShape) {
  ir::ValueInfo vi = Input("x", DataType::kFloat32, {});
  vi.type.shape.rank_known = false;
  ModelInputs m{{vi}, {}};
  EXPECT_TRUE(Validate(m, {BindExact("x", DataType::kFloat32, {2, 2, 2})}).ok());
}

}  // namespace
}  // namespace vigil::runtime
