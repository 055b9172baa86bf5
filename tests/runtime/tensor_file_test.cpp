// Tensor files: .npy round trips for every dtype, v1/v2/v3 headers, every
// refusal with its message; TensorProto .pb round trips and ONNX's own test
// data.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "onnx/tensor_proto.h"
#include "runtime/tensor_file.h"

namespace vigil::runtime {
namespace {

namespace fs = std::filesystem;
using ir::DataType;

class TensorFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("vigil_tensor_file_{}_{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  std::string Write(const std::string& name, const std::string& bytes) const {
    std::ofstream(Path(name), std::ios::binary) << bytes;
    return Path(name);
  }

  fs::path dir_;
};

// A .npy file by hand: magic, version, header length, header text, data.
std::string Npy(const std::string& header, const std::string& data, int major = 1) {
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  const size_t len = header.size();
  const int len_bytes = major == 1 ? 2 : 4;
  for (int i = 0; i < len_bytes; ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xFF));
  return out + header + data;
}

std::string Header(const std::string& descr, const std::string& shape, const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }\n";
}

Tensor Filled(DataType dtype, std::vector<int64_t> shape) {
  Tensor t = Tensor::Allocate(dtype, std::move(shape)).value();
  auto* p = static_cast<uint8_t*>(t.raw_data());
  for (size_t i = 0; i < t.byte_size(); ++i) p[i] = static_cast<uint8_t>(i * 7 + 1);
  if (dtype == DataType::kBool) {
    for (size_t i = 0; i < t.byte_size(); ++i) p[i] = i % 3 == 0;
  }
  return t;
}

void ExpectSame(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.byte_size(), b.byte_size());
  if (a.byte_size() > 0) EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()), 0);
}

TEST_F(TensorFileTest, NpyRoundTripsEveryDtype) {
  for (DataType dtype : {DataType::kBool, DataType::kInt8, DataType::kInt16, DataType::kInt32, DataType::kInt64,
                         DataType::kUint8, DataType::kUint16, DataType::kUint32, DataType::kUint64,
                         DataType::kFloat16, DataType::kFloat32, DataType::kFloat64, DataType::kBfloat16,
                         DataType::kComplex64, DataType::kComplex128}) {
    SCOPED_TRACE(std::string(ir::DataTypeName(dtype)));
    Tensor t = Filled(dtype, {2, 3, 5});
    const std::string path = Path("t.npy");
    ASSERT_TRUE(WriteNpy(path, t).ok());
    auto back = ReadNpy(path);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->name, "");
    ExpectSame(t, back->tensor);
    // numpy aligns the data to 64 bytes; so do we.
    EXPECT_EQ(fs::file_size(path) - t.byte_size(), 128u);
  }
}

TEST_F(TensorFileTest, NpyRoundTripsScalarsEmptyAnd1D) {
  for (std::vector<int64_t> shape : {std::vector<int64_t>{}, {0}, {7}, {3, 0, 2}}) {
    Tensor t = Filled(DataType::kFloat32, shape);
    ASSERT_TRUE(WriteNpy(Path("s.npy"), t).ok());
    auto back = ReadTensorFile(Path("s.npy"));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    ExpectSame(t, back->tensor);
  }
}

TEST_F(TensorFileTest, NpyHeaderIsWhatNumpyWrites) {
  ASSERT_TRUE(WriteNpy(Path("h.npy"), Filled(DataType::kFloat32, {2, 3})).ok());
  std::ifstream in(Path("h.npy"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  // The bytes np.save(f, np.zeros((2, 3), np.float32)) writes (numpy 2.x).
  std::string expected = std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
                         "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  expected += std::string(127 - expected.size(), ' ') + "\n";
  EXPECT_EQ(bytes.substr(0, 128), expected);
  EXPECT_EQ(bytes.size(), 128u + 24u);
}

TEST_F(TensorFileTest, NpyReadsVersions2And3) {
  const std::string data(24, '\x01');
  for (int major : {2, 3}) {
    auto t = ReadNpy(Write("v.npy", Npy(Header("<i4", "(2, 3)"), data, major)));
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t->tensor.Describe(), "int32[2,3]");
  }
  auto t = ReadNpy(Write("v1.npy", Npy(Header("<i4", "(6,)"), data, 1)));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->tensor.Describe(), "int32[6]");
}

TEST_F(TensorFileTest, NpyUnalignedDataIsCopied) {
  // Old numpy aligned to 16 bytes only: a header leaving float64 data at offset 4 mod 8.
  std::string header = Header("<f8", "(2,)");
  header.insert(header.size() - 1, std::string((8 - (10 + header.size()) % 8 + 4) % 8, ' '));
  std::string data(16, '\0');
  double v[2] = {1.5, -2.0};
  std::memcpy(data.data(), v, 16);
  auto t = ReadNpy(Write("u.npy", Npy(header, data)));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->tensor.raw_data()) % 8, 0u);
  EXPECT_EQ(t->tensor.data<double>()[1], -2.0);
}

Status ReadStatus(const std::string& path) { return ReadNpy(path).status(); }

TEST_F(TensorFileTest, NpyRefusesFortranOrder) {
  Status s = ReadStatus(Write("f.npy", Npy(Header("<f4", "(2, 2)", "True"), std::string(16, '\0'))));
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(s.summary().find("the array is in Fortran (column-major) order; vigil reads C order only"),
            std::string::npos);
  EXPECT_NE(s.diagnosis().fixes.at(0).find("np.ascontiguousarray"), std::string::npos);
}

TEST_F(TensorFileTest, NpyRefusesObjectArrays) {
  Status s = ReadStatus(Write("o.npy", Npy(Header("|O", "(2,)"), std::string(16, '\0'))));
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(s.summary().find("the array holds Python objects (dtype 'O'), not numbers"), std::string::npos);
}

TEST_F(TensorFileTest, NpyRefusesBigEndian) {
  Status s = ReadStatus(Write("b.npy", Npy(Header(">f4", "(2,)"), std::string(8, '\0'))));
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(s.summary().find("dtype '>f4' is big-endian; vigil reads little-endian data"), std::string::npos);
  // One-byte types have no byte order.
  EXPECT_TRUE(ReadNpy(Write("b1.npy", Npy(Header(">u1", "(2,)"), std::string(2, '\0')))).ok());
}

TEST_F(TensorFileTest, NpyRefusesUntypedTwoByteElements) {
  Status s = ReadStatus(Write("v2.npy", Npy(Header("<V2", "(2,)"), std::string(4, '\0'))));
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(s.summary().find("'<V2' is an untyped 2-byte element"), std::string::npos);
}

TEST_F(TensorFileTest, NpyRefusesUnsupportedDtype) {
  Status s = ReadStatus(Write("u.npy", Npy(Header("<U5", "(2,)"), std::string(40, '\0'))));
  EXPECT_NE(s.summary().find("dtype '<U5' is not supported"), std::string::npos);
}

TEST_F(TensorFileTest, NpyRefusesTruncatedDataSayingByHowMuch) {
  Status s = ReadStatus(Write("t.npy", Npy(Header("<f4", "(2, 3)"), std::string(20, '\0'))));
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(s.summary().find("the data is 4 bytes short: shape [2,3] of float32 needs 24 bytes, the file holds 20"),
            std::string::npos)
      << s.summary();
}

TEST_F(TensorFileTest, NpyRefusesTrailingBytes) {
  Status s = ReadStatus(Write("g.npy", Npy(Header("<f4", "(2,)"), std::string(12, '\0'))));
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(s.summary().find("4 bytes follow the data that shape [2] needs (2 elements, 8 bytes)"),
            std::string::npos)
      << s.summary();
}

TEST_F(TensorFileTest, NpyRefusesHugeShape) {
  Status s = ReadStatus(Write("h.npy", Npy(Header("<f4", "(4294967296, 4294967296, 16)"), "")));
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(s.summary().find("the element count of shape [4294967296,4294967296,16] overflows 64 bits"),
            std::string::npos)
      << s.summary();
  // Large but representable: refused as short data, not allocated.
  Status big = ReadStatus(Write("b.npy", Npy(Header("<f4", "(1000000, 1000000)"), "")));
  EXPECT_NE(big.summary().find("bytes short"), std::string::npos) << big.summary();
}

TEST_F(TensorFileTest, NpyRefusesBadHeaderDicts) {
  const std::pair<std::string, std::string> cases[] = {
      {"{'descr': '<f4', 'shape': (2,), }", "the dict lacks 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", "unexpected key 'extra'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "unexpected key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}", "expected True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", "expected a non-negative integer dim"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,) } junk", "unexpected text after the dict"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,", "expected a non-negative integer dim"},
      {"{'descr': '<f4", "unterminated or overlong string"},
      {"['descr', '<f4']", "expected '{'"},
  };
  for (const auto& [header, message] : cases) {
    SCOPED_TRACE(header);
    Status s = ReadStatus(Write("d.npy", Npy(header, std::string(8, '\0'))));
    ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
    EXPECT_NE(s.summary().find("bad .npy header"), std::string::npos) << s.summary();
    EXPECT_NE(s.summary().find(message), std::string::npos) << s.summary();
  }
}

TEST_F(TensorFileTest, NpyRefusesBadPreambles) {
  EXPECT_NE(ReadStatus(Write("e.npy", "")).summary().find("not a .npy file"), std::string::npos);
  EXPECT_NE(ReadStatus(Write("m.npy", "PK\x03\x04 zip archive")).summary().find("not a .npy file"),
            std::string::npos);
  std::string v9 = Npy(Header("<f4", "(1,)"), std::string(4, '\0'));
  v9[6] = 9;
  EXPECT_NE(ReadStatus(Write("v9.npy", v9)).summary().find("version 9.0 is not supported"), std::string::npos);
  std::string long_header = Npy(Header("<f4", "(1,)"), "");
  long_header[8] = '\xff';
  long_header[9] = '\x7f';
  EXPECT_NE(ReadStatus(Write("l.npy", long_header)).summary().find("the header claims 32767 bytes but only"),
            std::string::npos);
}

TEST_F(TensorFileTest, MissingFileIsAnError) {
  Status s = ReadTensorFile(Path("nope.npy")).status();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.summary().find("nope.npy"), std::string::npos);
}

TEST_F(TensorFileTest, UnknownExtensionIsRefused) {
  Status s = ReadTensorFile(Write("x.bin", "1234")).status();
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(s.summary().find("tensor files are .npy or .pb, not '.bin'"), std::string::npos);
}

TEST_F(TensorFileTest, TensorProtoRoundTrips) {
  for (DataType dtype : {DataType::kFloat32, DataType::kInt64, DataType::kBool, DataType::kFloat16,
                         DataType::kBfloat16, DataType::kUint8, DataType::kFloat64}) {
    SCOPED_TRACE(std::string(ir::DataTypeName(dtype)));
    Tensor t = Filled(dtype, {3, 1, 4});
    ASSERT_TRUE(WriteTensorProto(Path("t.pb"), t, "input_0").ok());
    auto back = ReadTensorFile(Path("t.pb"));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->name, "input_0");
    ExpectSame(t, back->tensor);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(back->tensor.raw_data()) % (ir::DataTypeBits(dtype) / 8), 0u);
  }
  Tensor scalar = Filled(DataType::kFloat32, {});
  ASSERT_TRUE(WriteTensorProto(Path("s.pb"), scalar, "").ok());
  auto back = ReadTensorProto(Path("s.pb"));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectSame(scalar, back->tensor);
}

TEST_F(TensorFileTest, TensorProtoRefusesGarbageAsInvalidInput) {
  Status s = ReadTensorProto(Write("g.pb", "\x0a\xff\xff\xff\x0f")).status();
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(s.summary().find("cannot read tensor file"), std::string::npos) << s.summary();
}

TEST_F(TensorFileTest, TensorProtoRefusesRawDataOfWrongSize) {
  // dims [4] float32 (field 1 = 4, field 2 = 1) with 8 bytes of raw_data (field 9).
  std::string pb = std::string("\x08\x04\x10\x01\x4a\x08", 6) + std::string(8, '\0');
  Status s = ReadTensorProto(Write("w.pb", pb)).status();
  ASSERT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(s.summary().find("raw_data has 8 bytes, dims [4] of float32 need 16"), std::string::npos)
      << s.summary();
}

TEST(TensorFileOnnxData, ReadsOnnxTestAbsData) {
  const std::string dir = "/usr/include/onnx/backend/test/data/node/test_abs/test_data_set_0/";
  if (!fs::exists(dir + "input_0.pb")) GTEST_SKIP() << "ONNX test data (libonnx-testdata) not installed at " << dir;
  auto in = ReadTensorFile(dir + "input_0.pb");
  auto out = ReadTensorFile(dir + "output_0.pb");
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(in->name, "x");
  EXPECT_EQ(in->tensor.Describe(), "float32[3,4,5]");
  ASSERT_EQ(out->tensor.Describe(), "float32[3,4,5]");
  for (uint64_t i = 0; i < in->tensor.element_count(); ++i) {
    EXPECT_EQ(std::abs(in->tensor.data<float>()[i]), out->tensor.data<float>()[i]);
  }
}

}  // namespace
// Seed 003's buffer (3 × 640 × 480 float32 values) written under the
// model's shape [1,3,224,224]: the first line says so, in both file forms.
TEST_F(TensorFileTest, SeedCaseImageOfAnotherSizeUnderTheModelsShape) {
  const std::string data(3 * 640 * 480 * 4, '\0');
  auto npy = ReadTensorFile(Write("seed.npy", Npy(Header("<f4", "(1, 3, 224, 224)"), data)));
  ASSERT_FALSE(npy.ok());
  EXPECT_NE(npy.status().summary().find("the data holds 921600 float32 values = 3 × 640 × 480, a 640 × 480 image, "
                                        "but the header says [1,3,224,224] (150528 values)"),
            std::string::npos)
      << npy.status().ToString();
  ASSERT_FALSE(npy.status().diagnosis().causes.empty());
  EXPECT_EQ(npy.status().diagnosis().causes[0].what, "the pixels of a 640 × 480 image written under the model's shape");

  const std::string pb = onnx::EncodeTensorProto("image", DataType::kFloat32, {1, 3, 224, 224},
                                                 {reinterpret_cast<const uint8_t*>(data.data()), data.size()});
  auto proto = ReadTensorFile(Write("seed.pb", pb));
  ASSERT_FALSE(proto.ok());
  EXPECT_NE(proto.status().summary().find("raw_data holds 921600 float32 values = 3 × 640 × 480, a 640 × 480 image"),
            std::string::npos)
      << proto.status().ToString();
  for (const Cause& c : proto.status().diagnosis().causes) {
    EXPECT_EQ(c.what.find("truncated"), std::string::npos) << proto.status().ToString();  // it is longer
  }
  // Longer than the dims but no image: not called truncated either.
  const std::string odd(150528 * 4 + 8, '\0');
  auto longer = ReadTensorFile(Write("long.pb", onnx::EncodeTensorProto(
                                                    "image", DataType::kFloat32, {1, 3, 224, 224},
                                                    {reinterpret_cast<const uint8_t*>(odd.data()), odd.size()})));
  ASSERT_FALSE(longer.ok());
  ASSERT_FALSE(longer.status().diagnosis().causes.empty());
  EXPECT_NE(longer.status().diagnosis().causes[0].what.find("different tensors"), std::string::npos)
      << longer.status().ToString();
}

}  // namespace vigil::runtime
