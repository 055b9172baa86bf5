// Autotuning and the tuning cache on the GPU (docs/tuning.md): a tuned
// session matches the CPU reference and records one choice per convolution
// shape; a later session answers every shape from the file, bitwise equal to
// the tuned one; a choice that no longer builds is measured again. Also the
// page-locked host buffers for inputs and outputs.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "session_test_util.h"

#ifdef VIGIL_TESTS_LAUNCH_CUDA_KERNELS
#include <cuda_runtime_api.h>
#endif

namespace vigil::cuda::testing {
namespace {

namespace fs = std::filesystem;

std::string CachePath(const char* name) {
  fs::path p = fs::temp_directory_path() / (std::string("vigil_tuning_session_") + name + ".tsv");
  fs::remove(p);
  return p.string();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t Lines(const std::string& text) {
  size_t n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

std::string AllNotes(const runtime::Session& s) {
  std::string all;
  for (const std::string& n : s.BackendNotes()) all += n + "\n";
  return all;
}

std::unique_ptr<runtime::Session> Tuned(bool tune, const std::string& cache) {
  backends::CudaBackendOptions o;
  o.deterministic = true;  // bitwise comparisons between sessions
  o.tune = tune;
  o.tuning_cache = cache;
  return TinyCnnSession(o);
}

void ExpectMatchesCpu(const runtime::Tensor& x, const runtime::Tensor& got) {
  auto cmp = runtime::CompareTensors(TinyCnnCpuReference(x), got, 1e300, 1e300);
  EXPECT_TRUE(cmp.same_shape);
  EXPECT_EQ(cmp.nan_mismatches, 0u);
  EXPECT_LE(cmp.rel_l2_error, 1e-5) << cmp.Describe();
}

TEST(Tuning, TunedRunsMatchTheCpuAndTheCacheAnswersTheNextSession) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const std::string path = CachePath("roundtrip");
  runtime::Tensor x = RandomTensor(ir::DataType::kFloat32, {2, 3, 32, 32}, 901);
  runtime::Tensor first;
  {
    auto tuned = Tuned(true, path);
    ASSERT_TRUE(tuned);
    auto out = tuned->Run(TinyCnnInput(x));
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    first = (*out)[0].tensor;
    ExpectMatchesCpu(x, first);
    EXPECT_NE(AllNotes(*tuned).find("measured now"), std::string::npos) << AllNotes(*tuned);
  }
  const std::string text = ReadFile(path);
  ASSERT_GT(Lines(text), 0u) << "nothing recorded";
  // tiny_cnn: two convolutions (cuDNN engines) and a Gemm (a cuBLASLt algorithm).
  EXPECT_NE(text.find("\tcudnn|fprop|"), std::string::npos) << text;
  EXPECT_TRUE(std::regex_search(text, std::regex("\tengine [0-9]+ knobs "))) << text;
  EXPECT_NE(text.find("\tcublaslt|lt|"), std::string::npos) << text;
  EXPECT_TRUE(std::regex_search(text, std::regex("\talgo( [0-9a-f]{16}){8}\t"))) << text;

  auto cached = Tuned(false, path);
  ASSERT_TRUE(cached);
  auto out = cached->Run(TinyCnnInput(x));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const runtime::Tensor& second = (*out)[0].tensor;
  ASSERT_EQ(second.byte_size(), first.byte_size());
  EXPECT_EQ(std::memcmp(second.raw_data(), first.raw_data(), first.byte_size()), 0);
  const std::string notes = AllNotes(*cached);
  EXPECT_NE(notes.find(fmt::format("{} recorded choice(s) for this GPU, {} used", Lines(text), Lines(text))),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("0 measured now"), std::string::npos) << notes;
  EXPECT_EQ(ReadFile(path), text) << "a session without --tune appended to the cache";
  fs::remove(path);
}

TEST(Tuning, AChoiceThatNoLongerBuildsIsMeasuredAgain) {
  VIGIL_SKIP_WITHOUT_CUDA();
  const std::string path = CachePath("stale");
  runtime::Tensor x = RandomTensor(ir::DataType::kFloat32, {1, 3, 32, 32}, 902);
  {
    auto tuned = Tuned(true, path);
    ASSERT_TRUE(tuned);
    ASSERT_TRUE(tuned->Run(TinyCnnInput(x)).ok());
  }
  // Every recorded engine replaced by one cuDNN does not have, every
  // cuBLASLt algorithm by one that does not parse.
  std::string text = std::regex_replace(ReadFile(path), std::regex("\tengine [0-9]+ knobs [^\t]*\t"),
                                        "\tengine 999999 knobs -\t");
  text = std::regex_replace(text, std::regex("\talgo [^\t]*\t"), "\talgo zz\t");
  std::ofstream(path, std::ios::trunc) << text;
  const size_t recorded = Lines(text);
  auto again = Tuned(true, path);
  ASSERT_TRUE(again);
  auto out = again->Run(TinyCnnInput(x));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectMatchesCpu(x, (*out)[0].tensor);
  const std::string notes = AllNotes(*again);
  EXPECT_NE(notes.find(fmt::format("{} recorded choice(s) no longer build here", recorded)), std::string::npos)
      << notes;
  EXPECT_EQ(Lines(ReadFile(path)), 2 * recorded) << "the new choices were not appended";
  fs::remove(path);
}

TEST(Tuning, AnUnwritableCacheFailsAtLoadWithADiagnosis) {
  VIGIL_SKIP_WITHOUT_CUDA();
  backends::CudaBackendOptions o;
  o.tune = true;
  o.tuning_cache = (fs::temp_directory_path() / "vigil_no_such_folder" / "x" / "cache.tsv").string();
  auto loaded = backends::LoadCudaBackend(o);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), ErrorCode::kEnvironment) << loaded.status().ToString();
  EXPECT_NE(loaded.status().ToString().find("cannot be written"), std::string::npos) << loaded.status().ToString();
}

TEST(PinnedBuffers, HostBuffersAndOutputsArePageLocked) {
  VIGIL_SKIP_WITHOUT_CUDA();
  auto session = Tuned(false, "");
  ASSERT_TRUE(session);
  runtime::Tensor x = RandomTensor(ir::DataType::kFloat32, {2, 3, 32, 32}, 903);
  auto buffer = session->AllocateHostBuffer(x.dtype(), x.shape());
  ASSERT_TRUE(buffer.ok()) << buffer.status().ToString();
  ASSERT_TRUE(buffer->on_host());
  std::memcpy(buffer->raw_data(), x.raw_data(), x.byte_size());
  auto out = session->Run(TinyCnnInput(*buffer));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectMatchesCpu(x, (*out)[0].tensor);
#ifdef VIGIL_TESTS_LAUNCH_CUDA_KERNELS
  unsigned flags = 0;
  EXPECT_EQ(cudaHostGetFlags(&flags, buffer->raw_data()), cudaSuccess) << "the input buffer is not page-locked";
  EXPECT_EQ(cudaHostGetFlags(&flags, const_cast<void*>((*out)[0].tensor.raw_data())), cudaSuccess)
      << "the output is not page-locked";
  cudaGetLastError();
#endif
}

}  // namespace
}  // namespace vigil::cuda::testing
