// The C API of libvigil.so (include/vigil/vigil.h) and its C++ wrapper,
// tested against the shared library itself: sessions, the checks every
// caller buffer goes through (seed 003's size, seed 000's dtype), options,
// outputs into caller buffers, threads, and that no bad argument crashes.
#include <cmath>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "vigil/vigil.h"
#include "vigil/vigil.hpp"

namespace {

const std::string kModels = VIGIL_TEST_MODELS_DIR;
const std::string kMobileNet = kModels + "/tiny/mobilenet_v2/model.onnx";

// The status's code, released (a status is the caller's to release, even in a test).
vigil_error_code CodeOf(vigil_status* s) {
  const vigil_error_code code = vigil_status_code(s);
  vigil_status_release(s);
  return code;
}

// The status's summary, released.
std::string Summary(vigil_status* s) {
  std::string text = vigil_status_summary(s);
  vigil_status_release(s);
  return text;
}

struct Loaded {
  vigil::Value input;
  vigil::Value reference;
};

Loaded MobileNetData() {
  return {vigil::ReadTensorFile(kModels + "/tiny/mobilenet_v2/input_0.npy"),
          vigil::ReadTensorFile(kModels + "/tiny/mobilenet_v2/ref_0.npy")};
}

// Relative L2 error in float64; NaN or a size mismatch gives infinity.
double RelL2(const float* got, const float* want, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(got[i])) return std::numeric_limits<double>::infinity();
    double d = static_cast<double>(got[i]) - want[i];
    num += d * d;
    den += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(num / (den > 0 ? den : 1));
}

TEST(CApi, VersionMatchesHeader) {
  EXPECT_EQ(vigil_api_version(), static_cast<uint32_t>(VIGIL_API_VERSION));
  EXPECT_STRNE(vigil_version_string(), "");
}

TEST(CApi, RunsARealModelAndMatchesOnnxRuntime) {
  Loaded d = MobileNetData();
  vigil_session* session = nullptr;
  ASSERT_EQ(vigil_session_create(kMobileNet.c_str(), nullptr, &session), nullptr);
  ASSERT_EQ(vigil_session_input_count(session), 1u);
  vigil_io_info info{};
  ASSERT_EQ(vigil_session_input_info(session, 0, &info), nullptr);
  EXPECT_STREQ(info.name, "input_0");
  EXPECT_EQ(info.dtype, VIGIL_DTYPE_FLOAT32);
  ASSERT_EQ(info.rank, 4u);

  vigil_tensor in{};
  vigil_value_as_tensor(d.input.get(), &in);
  in.name = "input_0";
  vigil_value* out = nullptr;
  ASSERT_EQ(vigil_session_run(session, &in, 1, nullptr, 1, &out), nullptr);
  ASSERT_EQ(vigil_value_dtype(out), VIGIL_DTYPE_FLOAT32);
  ASSERT_EQ(vigil_value_byte_size(out), d.reference.ByteSize());
  EXPECT_LE(RelL2(static_cast<const float*>(vigil_value_data(out)), d.reference.Data<float>(),
                  d.reference.ElementCount()),
            1e-4);
  EXPECT_STREQ(vigil_session_backends(session), "cpu");
  vigil_value_release(out);
  vigil_session_release(session);
}

TEST(CApi, Seed003ChannelsTimesTotalBufferIsDiagnosedNotRead) {
  vigil::Session session(kMobileNet);
  // cv::Mat 640x480, 3 channels: img.channels() * img.total() floats given
  // for a [1,3,96,96] input.
  std::vector<float> image(3 * 640 * 480, 0.5f);
  try {
    session.Run({vigil::TensorRef::Of("input_0", image.data(), image.size(), {1, 3, 96, 96})});
    FAIL() << "a buffer of the wrong size ran";
  } catch (const vigil::Error& e) {
    EXPECT_EQ(e.code(), vigil::ErrorCode::kInvalidInput);
    EXPECT_NE(e.summary().find("input_0"), std::string::npos) << e.what();
    const std::string text = e.what();
    // The first line is the headline: the cause (the channels × total
    // mistake) and its fix; the symptom follows.
    EXPECT_EQ(text.substr(0, text.find('\n')), "error [InvalidInput]: " + e.headline());
    EXPECT_NE(e.headline().find("channels*height*width"), std::string::npos) << e.what();
    EXPECT_NE(e.headline().find(" — fix: resize the image to 96 × 96"), std::string::npos) << e.what();
    EXPECT_NE(text.find("  symptom: " + e.summary()), std::string::npos) << e.what();
    ASSERT_FALSE(e.causes().empty());
    EXPECT_EQ(e.headline().rfind(e.causes()[0].what, 0), 0u) << "the headline starts with cause 1";
  }
}

TEST(CApi, Seed000Int32ForFloat32IsDiagnosed) {
  vigil::Session session(kMobileNet);
  std::vector<int32_t> pixels(3 * 96 * 96, 1);
  try {
    session.Run({vigil::TensorRef::Of("input_0", pixels.data(), pixels.size(), {1, 3, 96, 96})});
    FAIL() << "int32 data ran as float32";
  } catch (const vigil::Error& e) {
    EXPECT_EQ(e.code(), vigil::ErrorCode::kInvalidInput);
    EXPECT_NE(e.summary().find("int32"), std::string::npos) << e.what();
    EXPECT_NE(e.summary().find("float32"), std::string::npos) << e.what();
    nlohmann::json j = nlohmann::json::parse(e.json());
    EXPECT_EQ(j["summary"], e.summary());
  }
}

TEST(CApi, NullAndBadArgumentsAreStatusesNotCrashes) {
  vigil_session* session = nullptr;
  EXPECT_EQ(CodeOf(vigil_session_create(nullptr, nullptr, &session)), VIGIL_ERROR_INVALID_INPUT);
  vigil_status* s = vigil_session_create(nullptr, nullptr, &session);
  EXPECT_NE(Summary(s).find("model_path"), std::string::npos);
  EXPECT_EQ(CodeOf(vigil_session_run(nullptr, nullptr, 0, nullptr, 0, nullptr)), VIGIL_ERROR_INVALID_INPUT);
  ASSERT_EQ(vigil_session_create(kMobileNet.c_str(), nullptr, &session), nullptr);
  vigil_value* out = nullptr;
  int64_t shape[] = {1, 3, 96, 96};
  // A NULL data pointer for a non-empty tensor, an unknown dtype, a NULL shape.
  vigil_tensor t{"input_0", VIGIL_DTYPE_FLOAT32, shape, 4, nullptr, 3 * 96 * 96 * 4, VIGIL_MEMORY_HOST, 0, nullptr};
  EXPECT_EQ(CodeOf(vigil_session_run(session, &t, 1, nullptr, 1, &out)), VIGIL_ERROR_INVALID_INPUT);
  t.dtype = static_cast<vigil_dtype>(77);
  s = vigil_session_run(session, &t, 1, nullptr, 1, &out);
  EXPECT_NE(Summary(s).find("dtype 77"), std::string::npos);
  t.dtype = VIGIL_DTYPE_FLOAT32;
  t.shape = nullptr;
  EXPECT_EQ(CodeOf(vigil_session_run(session, &t, 1, nullptr, 1, &out)), VIGIL_ERROR_INVALID_INPUT);
  EXPECT_EQ(out, nullptr);
  const char* bad_name = "no_such_output";
  std::vector<float> data(3 * 96 * 96);
  t.shape = shape;
  t.data = data.data();
  s = vigil_session_run(session, &t, 1, &bad_name, 1, &out);
  ASSERT_NE(s, nullptr);
  EXPECT_NE(std::string(vigil_status_summary(s)).find("no_such_output"), std::string::npos);
  EXPECT_EQ(vigil_status_fact_count(s), 1u);
  const std::string text = vigil_status_text(s);  // its first line is the headline
  EXPECT_EQ(text.substr(0, text.find('\n')), std::string("error [InvalidInput]: ") + vigil_status_headline(s));
  EXPECT_NE(std::string(vigil_status_json(s)).find("{\"headline\":"), std::string::npos) << vigil_status_json(s);
  vigil_status_release(s);
  vigil_session_release(session);
  vigil_status_release(nullptr);  // accepted
  EXPECT_STREQ(vigil_status_headline(nullptr), "");
}

TEST(CApi, OptionsAreCheckedBeforeAnythingLoads) {
  vigil_session_options o;
  vigil_session_options_init(&o);
  vigil_session* session = nullptr;
  o.struct_size = 0;
  vigil_status* s = vigil_session_create(kMobileNet.c_str(), &o, &session);
  ASSERT_NE(s, nullptr);
  EXPECT_NE(std::string(vigil_status_text(s)).find("vigil_session_options_init"), std::string::npos);
  vigil_status_release(s);

  vigil_session_options_init(&o);
  vigil_backend wrong_order[] = {VIGIL_BACKEND_CPU, VIGIL_BACKEND_CUDA};
  o.backends = wrong_order;
  o.backend_count = 2;
  EXPECT_NE(Summary(vigil_session_create(kMobileNet.c_str(), &o, &session)).find("before CUDA"), std::string::npos);

  vigil_session_options_init(&o);
  o.intra_op_num_threads = -2;
  vigil_status* threads = vigil_session_create(kMobileNet.c_str(), &o, &session);
  EXPECT_EQ(vigil_status_code(threads), VIGIL_ERROR_INVALID_INPUT);
  EXPECT_NE(std::string(vigil_status_summary(threads)).find("intra_op_num_threads is -2"), std::string::npos);
  vigil_status_release(threads);
  EXPECT_EQ(session, nullptr);
}

// 3xTF32 float32 products are on unless turned off, in C and in C++.
TEST(CApi, Tf32x3IsOnByDefaultInBothInterfaces) {
  vigil_session_options o;
  std::memset(&o, 0, sizeof o);
  vigil_session_options_init(&o);
  EXPECT_EQ(o.allow_tf32x3, 1);
  vigil::SessionOptions cpp;
  EXPECT_TRUE(cpp.allow_tf32x3);
  EXPECT_EQ(vigil::CSessionOptions(cpp).get()->allow_tf32x3, 1);
  cpp.allow_tf32x3 = false;
  EXPECT_EQ(vigil::CSessionOptions(cpp).get()->allow_tf32x3, 0);
  // Off, a CPU session runs as before (the option is the CUDA backend's).
  vigil_session* session = nullptr;
  o.allow_tf32x3 = 0;
  vigil_status* s = vigil_session_create(kMobileNet.c_str(), &o, &session);
  EXPECT_EQ(s, nullptr) << vigil_status_text(s);
  vigil_status_release(s);
  vigil_session_release(session);
}

// First-run measuring is on unless turned off, in C and in C++.
TEST(CApi, MeasureFirstRunIsOnByDefaultInBothInterfaces) {
  vigil_session_options o;
  std::memset(&o, 0, sizeof o);
  vigil_session_options_init(&o);
  EXPECT_EQ(o.measure_first_run, 1);
  vigil::SessionOptions cpp;
  EXPECT_TRUE(cpp.measure_first_run);
  EXPECT_EQ(vigil::CSessionOptions(cpp).get()->measure_first_run, 1);
  cpp.measure_first_run = false;
  EXPECT_EQ(vigil::CSessionOptions(cpp).get()->measure_first_run, 0);
}

// The first output of MobileNet from a session made with these options.
std::vector<float> MobileNetOutput(const vigil_session_options& o) {
  Loaded d = MobileNetData();
  vigil_session* session = nullptr;
  vigil_status* s = vigil_session_create(kMobileNet.c_str(), &o, &session);
  EXPECT_EQ(s, nullptr) << vigil_status_text(s);
  vigil_status_release(s);
  if (!session) return {};
  vigil_tensor in{};
  vigil_value_as_tensor(d.input.get(), &in);
  in.name = "input_0";
  vigil_value* out = nullptr;
  s = vigil_session_run(session, &in, 1, nullptr, 1, &out);
  EXPECT_EQ(s, nullptr) << vigil_status_text(s);
  vigil_status_release(s);
  std::vector<float> values;
  if (out) {
    const float* p = static_cast<const float*>(vigil_value_data(out));
    values.assign(p, p + vigil_value_byte_size(out) / sizeof(float));
  }
  vigil_value_release(out);
  vigil_session_release(session);
  return values;
}

// A caller built against an older vigil.h passes a shorter struct: the
// library reads it up to its struct_size and gives later fields their
// defaults, never the bytes that follow the caller's struct. Seen through
// run_as_float16 (added after API version 2), which changes a CPU session's
// outputs: set in the bytes past a version-2 struct_size, it is ignored.
TEST(CApi, OlderOptionsStructsAreReadUpToTheirSize) {
  vigil_session_options o;
  vigil_session_options_init(&o);
  const std::vector<float> plain = MobileNetOutput(o);
  ASSERT_FALSE(plain.empty());

  o.run_as_float16 = 1;
  const std::vector<float> half = MobileNetOutput(o);
  ASSERT_EQ(half.size(), plain.size());
  EXPECT_NE(half, plain) << "run_as_float16 did not change the outputs, so this test shows nothing";

  o.struct_size = offsetof(vigil_session_options, run_as_float16);  // API version 2, as first released
  EXPECT_EQ(MobileNetOutput(o), plain);
  o.struct_size = offsetof(vigil_session_options, measure_first_run);  // before API version 3
  EXPECT_EQ(MobileNetOutput(o), half);

  o.struct_size = offsetof(vigil_session_options, allow_tf32x3);  // 124: no version had this size
  vigil_session* session = nullptr;
  vigil_status* s = vigil_session_create(kMobileNet.c_str(), &o, &session);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(vigil_status_code(s), VIGIL_ERROR_INVALID_INPUT);
  EXPECT_NE(std::string(vigil_status_summary(s)).find("not the size of any version"), std::string::npos)
      << vigil_status_summary(s);
  vigil_status_release(s);
  EXPECT_EQ(session, nullptr);
}

// The sized initialiser (behind the vigil_session_options_init macro) writes
// no byte at or past the caller's size: an older caller's struct of 120 or
// 128 bytes gets the defaults it has room for, and the bytes after it are
// untouched. A larger size (a newer caller) gets this library's fields and
// size, zeros after. The unsized symbol of API versions 2 to 4 writes
// versions 3 and 4's 136 bytes and no more.
TEST(CApi, OptionsInitWritesNoMoreThanTheCallersStruct) {
  constexpr size_t kBuffer = 256;
  struct Case {
    size_t size;
    uint32_t struct_size;
    int allow_tf32x3, measure_first_run;  // -1: past the size, not written
  };
  static_assert(sizeof(vigil_session_options) == 136, "a new field: add its size to these cases");
  for (const Case& c : {Case{120, 120, -1, -1}, Case{128, 128, 1, -1}, Case{136, 136, 1, 1},
                        Case{200, 136, 1, 1}}) {
    SCOPED_TRACE(c.size);
    alignas(vigil_session_options) unsigned char buffer[kBuffer];
    std::memset(buffer, 0xAB, sizeof buffer);
    auto* o = reinterpret_cast<vigil_session_options*>(buffer);
    vigil_session_options_init_sized(o, c.size);
    EXPECT_EQ(o->struct_size, c.struct_size);
    EXPECT_EQ(o->layout, VIGIL_LAYOUT_AUTO);
    EXPECT_EQ(o->constant_folding, 1);
    EXPECT_EQ(o->backend_count, 0u);
    EXPECT_EQ(o->enable_profiling, 0);
    if (c.allow_tf32x3 >= 0) {
      EXPECT_EQ(o->allow_tf32x3, c.allow_tf32x3);
    }
    if (c.measure_first_run >= 0) {
      EXPECT_EQ(o->measure_first_run, c.measure_first_run);
    }
    for (size_t i = sizeof(vigil_session_options); i < c.size; ++i) ASSERT_EQ(buffer[i], 0) << "byte " << i;
    for (size_t i = c.size; i < kBuffer; ++i) ASSERT_EQ(buffer[i], 0xAB) << "byte " << i << " past the caller's struct";
    // What the sized init gives an older caller is a struct the library takes.
    vigil_session* session = nullptr;
    vigil_status* s = vigil_session_create(kMobileNet.c_str(), o, &session);
    EXPECT_EQ(s, nullptr) << vigil_status_text(s);
    vigil_status_release(s);
    vigil_session_release(session);
  }
  // Sizes too small for struct_size itself: nothing past them is written.
  alignas(vigil_session_options) unsigned char small[16];
  std::memset(small, 0xAB, sizeof small);
  vigil_session_options_init_sized(reinterpret_cast<vigil_session_options*>(small), 2);
  EXPECT_EQ(small[0], 0);
  EXPECT_EQ(small[1], 0);
  EXPECT_EQ(small[2], 0xAB);
  vigil_session_options_init_sized(nullptr, 136);  // accepted, does nothing
  // The macro passes the caller's size.
  vigil_session_options o;
  vigil_session_options_init(&o);
  EXPECT_EQ(o.struct_size, sizeof o);
  // The exported unsized function, called as an old program calls it.
  alignas(vigil_session_options) unsigned char old[kBuffer];
  std::memset(old, 0xAB, sizeof old);
  (vigil_session_options_init)(reinterpret_cast<vigil_session_options*>(old));
  EXPECT_EQ(reinterpret_cast<vigil_session_options*>(old)->struct_size, 136u);
  EXPECT_EQ(reinterpret_cast<vigil_session_options*>(old)->measure_first_run, 1);
  for (size_t i = 136; i < kBuffer; ++i) ASSERT_EQ(old[i], 0xAB) << "byte " << i;
}

// 3xTF32 convolutions are off unless turned on, in C and in C++; the field
// took bytes that were padding, so the struct kept its size, and a CPU
// session takes the option (it is the CUDA backend's) and runs as before.
TEST(CApi, Tf32x3ConvolutionsAreOffByDefaultInBothInterfaces) {
  static_assert(offsetof(vigil_session_options, tf32x3_convolutions) + sizeof(int) <= sizeof(vigil_session_options));
  vigil_session_options o;
  std::memset(&o, 0xff, sizeof o);
  vigil_session_options_init(&o);
  EXPECT_EQ(o.tf32x3_convolutions, 0);
  vigil::SessionOptions cpp;
  EXPECT_FALSE(cpp.tf32x3_convolutions);
  EXPECT_EQ(vigil::CSessionOptions(cpp).get()->tf32x3_convolutions, 0);
  cpp.tf32x3_convolutions = true;
  EXPECT_EQ(vigil::CSessionOptions(cpp).get()->tf32x3_convolutions, 1);
  const std::vector<float> plain = MobileNetOutput(o);
  ASSERT_FALSE(plain.empty());
  o.tf32x3_convolutions = 1;
  EXPECT_EQ(MobileNetOutput(o), plain);
}

TEST(CApi, ThreadCountsGiveTheSameOutputs) {
  Loaded d = MobileNetData();
  for (int threads : {1, 3}) {
    vigil::SessionOptions o;
    o.intra_op_num_threads = threads;
    vigil::Session session(kMobileNet, o);
    auto out = session.Run({d.input.AsInput("input_0")});
    ASSERT_EQ(out[0].ByteSize(), d.reference.ByteSize());
    EXPECT_LE(RelL2(out[0].Data<float>(), d.reference.Data<float>(), d.reference.ElementCount()), 1e-4) << threads;
  }
}

TEST(CApi, CudaFromAMissingModuleIsAnEnvironmentDiagnosis) {
  vigil::SessionOptions o;
  o.backends = {vigil::Backend::kCuda};
  o.cuda_module_path = "/nonexistent/libvigil_cuda.so";
  try {
    vigil::Session session(kMobileNet, o);
    FAIL() << "a session on a missing module";
  } catch (const vigil::Error& e) {
    EXPECT_EQ(e.code(), vigil::ErrorCode::kEnvironment) << e.what();
    EXPECT_NE(std::string(e.what()).find("/nonexistent/libvigil_cuda.so"), std::string::npos) << e.what();
  }
}

TEST(CApi, SessionFromMemoryRunsLikeFromFile) {
  std::ifstream f(kMobileNet, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  Loaded d = MobileNetData();
  vigil::Session from_file(kMobileNet);
  vigil::Session from_memory(bytes.data(), bytes.size());
  auto a = from_file.Run({d.input.AsInput("input_0")});
  auto b = from_memory.Run({d.input.AsInput("input_0")});
  ASSERT_EQ(a[0].ByteSize(), b[0].ByteSize());
  EXPECT_EQ(std::memcmp(a[0].RawData(), b[0].RawData(), a[0].ByteSize()), 0);
  EXPECT_THROW(vigil::Session(bytes.data(), 10), vigil::Error);  // truncated: a diagnosis
}

TEST(CApi, OutputIntoACallerBufferThroughIoBinding) {
  Loaded d = MobileNetData();
  vigil::Session session(kMobileNet);
  auto expected = session.Run({d.input.AsInput("input_0")});
  const std::string out_name = session.Outputs()[0].name;
  std::vector<float> out(1000, std::numeric_limits<float>::quiet_NaN());  // poisoned
  vigil::IoBinding binding(session);
  binding.BindInput(d.input.AsInput("input_0"));
  binding.BindOutput(vigil::TensorRef::Of(out_name, out.data(), out.size(), {1, 1000}));
  session.Run(binding);
  EXPECT_EQ(std::memcmp(out.data(), expected[0].RawData(), expected[0].ByteSize()), 0);
  // A buffer of the wrong shape for the output is refused, naming it.
  std::vector<float> small(10);
  binding.BindOutput(vigil::TensorRef::Of(out_name, small.data(), small.size(), {1, 10}));
  try {
    session.Run(binding);
    FAIL();
  } catch (const vigil::Error& e) {
    EXPECT_NE(e.summary().find(out_name), std::string::npos) << e.what();
  }
}

TEST(CApi, ConcurrentRunsGiveTheSameOutputs) {
  Loaded d = MobileNetData();
  vigil::Session session(kMobileNet);
  auto expected = session.Run({d.input.AsInput("input_0")});
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 3; ++i) {
        auto got = session.Run({d.input.AsInput("input_0")});
        mismatches[t] += std::memcmp(got[0].RawData(), expected[0].RawData(), expected[0].ByteSize()) != 0;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

TEST(CApi, DescriptionsAreJson) {
  nlohmann::json model = nlohmann::json::parse(vigil::DescribeModelJson(kMobileNet, true));
  EXPECT_EQ(model["inputs"][0]["name"], "input_0");
  EXPECT_GT(model["flops"].get<uint64_t>(), 0u);
  vigil::Session session(kMobileNet);
  nlohmann::json where = nlohmann::json::parse(session.DescribeJson());
  EXPECT_GT(where["nodes_per_backend"]["cpu"].get<int>(), 0);
  nlohmann::json notes = nlohmann::json::parse(session.NotesJson());
  EXPECT_TRUE(notes.contains("backend_notes"));
  EXPECT_THROW(vigil::DescribeModelJson("/nonexistent.onnx"), vigil::Error);
}

TEST(CApi, CheckReportsBoundSymbolicDims) {
  vigil::Session session(kModels + "/tiny/text_encoder/model.onnx");
  vigil::Value ids = vigil::ReadTensorFile(kModels + "/tiny/text_encoder/input_0.npy");
  std::string dims = session.Check({ids.AsInput(session.Inputs()[0].name)});
  EXPECT_TRUE(nlohmann::json::parse(dims).is_object()) << dims;
}

TEST(CApi, IsolatedSessionRunsInAChildAndMatches) {
  // Each run in vigil-worker (a crash there is VIGIL_ERROR_CRASHED: the CLI
  // and Python tests make one with the test-only Crash op).
  Loaded d = MobileNetData();
  vigil::Session here(kMobileNet);
  auto expected = here.Run({d.input.AsInput("input_0")});
  vigil::SessionOptions o;
  o.isolate = true;
  vigil::Session apart(kMobileNet, o);
  EXPECT_EQ(apart.Backends(), "cpu");
  auto got = apart.Run({d.input.AsInput("input_0")});
  ASSERT_EQ(got[0].ByteSize(), expected[0].ByteSize());
  EXPECT_EQ(std::memcmp(got[0].RawData(), expected[0].RawData(), expected[0].ByteSize()), 0);

  std::ifstream f(kMobileNet, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  vigil::Session from_memory(bytes.data(), bytes.size(), o);
  auto again = from_memory.Run({d.input.AsInput("input_0")});
  EXPECT_EQ(std::memcmp(again[0].RawData(), expected[0].RawData(), expected[0].ByteSize()), 0);

  // Inputs are checked in this process, with the usual diagnosis.
  std::vector<float> short_buffer(10);
  vigil_tensor bad{"input_0", VIGIL_DTYPE_FLOAT32, nullptr, 0, short_buffer.data(), 40, VIGIL_MEMORY_HOST, 0, nullptr};
  const int64_t shape[] = {1, 3, 96, 96};
  bad.shape = shape;
  bad.rank = 4;
  vigil_value* out = nullptr;
  vigil_status* s = vigil_session_run(apart.get(), &bad, 1, nullptr, 1, &out);
  EXPECT_EQ(vigil_status_code(s), VIGIL_ERROR_INVALID_INPUT);
  vigil_status_release(s);

  // What needs the session in this process says so.
  vigil_io_binding* binding = nullptr;
  s = vigil_io_binding_create(apart.get(), &binding);
  EXPECT_EQ(vigil_status_code(s), VIGIL_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(vigil_status_summary(s)).find("isolated session"), std::string::npos);
  vigil_status_release(s);
  EXPECT_EQ(binding, nullptr);
  EXPECT_THROW(apart.PlanJson({d.input.AsInput("input_0")}), vigil::Error);
}

}  // namespace
