// Session-level GPU behaviour on the bundled example CNN: many threads on one
// session, bitwise determinism, the memory check before a run, and the
// partition (what runs where) with and without fallback.
#include <thread>

#include "session_test_util.h"
#include "runtime/tensor_file.h"
#include "backends/cpu/kernel_type_constraints.h"

namespace vigil::cuda::testing {
namespace {

std::unique_ptr<runtime::Session> CnnSession(bool deterministic, uint64_t memory_limit = 0) {
  backends::CudaBackendOptions o;
  o.deterministic = deterministic;
  o.memory_limit = memory_limit;
  return TinyCnnSession(o);
}

TEST(CudaSession, EightThreadsShareOneSession) {
  VIGIL_SKIP_WITHOUT_CUDA();
  auto session = CnnSession(false);
  ASSERT_TRUE(session);
  std::vector<runtime::Tensor> inputs;
  for (int t = 0; t < 8; ++t) inputs.push_back(RandomTensor(ir::DataType::kFloat32, {4 + t, 3, 32, 32}, 100 + t));
  std::vector<std::string> errors(8);
  std::vector<std::vector<runtime::NamedTensor>> outputs(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int iter = 0; iter < 20; ++iter) {
        auto out = session->Run(TinyCnnInput(inputs[t]));
        if (!out.ok()) {
          errors[t] = out.status().ToString();
          return;
        }
        outputs[t] = std::move(out).value();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) {
    ASSERT_TRUE(errors[t].empty()) << "thread " << t << ": " << errors[t];
    runtime::Tensor want = TinyCnnCpuReference(inputs[t]);
    auto cmp = runtime::CompareTensors(want, outputs[t][0].tensor, 1e300, 1e300);
    EXPECT_TRUE(cmp.same_shape);
    EXPECT_EQ(cmp.nan_mismatches, 0u);
    EXPECT_LE(cmp.rel_l2_error, 1e-4) << "thread " << t << ": " << cmp.Describe();
  }
}

// The float32 example CNN computed in float16 (run_as_float16): every node
// still runs on the GPU (no fallback), its convolutions channels-last as a
// float16 model's, and the output stays within float16's tolerance of the
// CPU's float32 reference without being float32's result.
TEST(CudaSession, Float32ModelRunsAsFloat16) {
  VIGIL_SKIP_WITHOUT_CUDA();
  auto loaded = backends::LoadCudaBackend(backends::CudaBackendOptions{});
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  auto model = onnx::ReadModel(kTinyCnnModel);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  runtime::SessionOptions options;
  options.backends = {loaded->backend, cpu::MakeCpuBackend()};
  options.no_fallback = true;
  options.conv_layout = runtime::ConvLayout::kNhwcWhereFaster;
  options.float16_inputs = cpu::TakesFloat16Input;
  auto session = runtime::Session::Create(std::move(model).value(), options);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  size_t nhwc = 0;
  for (const ir::Node& n : (*session)->model().graph.nodes) nhwc += n.op_type == ir::kConvNhwcOp;
  EXPECT_GT(nhwc, 0u);
  EXPECT_GT((*session)->float16_summary().converted_nodes, 0u);
  runtime::Tensor x = RandomTensor(ir::DataType::kFloat32, {13, 3, 32, 32}, 11);
  auto out = (*session)->Run(TinyCnnInput(x));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].tensor.dtype(), ir::DataType::kFloat32);
  auto cmp = runtime::CompareTensors(TinyCnnCpuReference(x), (*out)[0].tensor, 1e300, 1e300);
  EXPECT_TRUE(cmp.same_shape);
  EXPECT_EQ(cmp.nan_mismatches, 0u);
  EXPECT_LE(cmp.rel_l2_error, ConvTolerance(kF16)) << cmp.Describe();
  EXPECT_GT(cmp.rel_l2_error, 1e-6) << "float32's own result: nothing ran in float16";
}

TEST(CudaSession, DeterministicRunsAreBitwiseEqual) {
  VIGIL_SKIP_WITHOUT_CUDA();
  auto session = CnnSession(true);
  ASSERT_TRUE(session);
  runtime::Tensor x = RandomTensor(ir::DataType::kFloat32, {16, 3, 32, 32}, 7);
  auto first = session->Run(TinyCnnInput(x));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  for (int i = 0; i < 10; ++i) {
    auto again = session->Run(TinyCnnInput(x));
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    const runtime::Tensor& a = (*first)[0].tensor;
    const runtime::Tensor& b = (*again)[0].tensor;
    ASSERT_EQ(a.byte_size(), b.byte_size());
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()), 0) << "run " << i << " differs";
  }
}

TEST(CudaSession, InputsAlreadyOnTheDeviceGiveTheSameOutputs) {
  VIGIL_SKIP_WITHOUT_CUDA();
  auto session = CnnSession(true);
  ASSERT_TRUE(session);
  runtime::Tensor x = RandomTensor(ir::DataType::kFloat32, {5, 3, 32, 32}, 11);
  auto from_host = session->Run(TinyCnnInput(x));
  ASSERT_TRUE(from_host.ok()) << from_host.status().ToString();
  auto up = session->UploadInput(x);
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  EXPECT_EQ(up->device(), runtime::Device::kCuda);
  std::vector<runtime::InputBinding> on_device = TinyCnnInput(*up);
  on_device[0].device = runtime::Device::kCuda;
  for (int i = 0; i < 3; ++i) {
    auto out = session->Run(on_device);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    const runtime::Tensor& a = (*from_host)[0].tensor;
    const runtime::Tensor& b = (*out)[0].tensor;
    ASSERT_TRUE(b.on_host());
    ASSERT_EQ(a.byte_size(), b.byte_size());
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()), 0) << "run " << i;
  }
}

TEST(CudaSession, RunOverTheMemoryLimitIsRefusedWithTheLargestTensors) {
  VIGIL_SKIP_WITHOUT_CUDA();
  // Batch 64 plans about 4 MB on the device; batch 1 about 70 KB.
  auto session = CnnSession(false, /*memory_limit=*/1 << 20);
  ASSERT_TRUE(session);
  runtime::Tensor x = RandomTensor(ir::DataType::kFloat32, {64, 3, 32, 32}, 9);
  // Every node is on the GPU: the plan is all device arena, no host arena.
  auto plan = session->Plan(TinyCnnInput(x));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->arena_bytes, 0u);
  EXPECT_GT(plan->device_arena_bytes, uint64_t{1} << 20);
  auto out = session->Run(TinyCnnInput(x));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), ErrorCode::kOutOfMemory) << out.status().ToString();
  EXPECT_NE(out.status().summary().find("--gpu-mem-limit"), std::string::npos) << out.status().summary();
  std::string largest;
  for (const Fact& f : out.status().diagnosis().facts) {
    if (f.name == "largest tensors") largest = f.value;
  }
  EXPECT_NE(largest.find("float32[64,"), std::string::npos) << largest;
  ASSERT_FALSE(out.status().diagnosis().fixes.empty());
  // A batch that fits still runs on the same session.
  runtime::Tensor small = RandomTensor(ir::DataType::kFloat32, {1, 3, 32, 32}, 9);
  auto ran = session->Run(TinyCnnInput(small));
  EXPECT_TRUE(ran.ok()) << ran.status().ToString();
}

TEST(CudaSession, FallbackNamesTheNodeAndTheReason) {
  VIGIL_SKIP_WITHOUT_CUDA();
  // CumSum has no CUDA kernel: with fallback it runs on the CPU and says
  // why; without, session creation names it.
  NodeCase c;
  c.op = "CumSum";
  c.opset = 14;
  c.inputs = {RandomTensor(ir::DataType::kFloat32, {5}, 1), cpu::testing::I64({}, {0})};
  c.constant = {false, true};
  runtime::SessionOptions options;
  options.backends = {CudaBackendForTests(), cpu::MakeCpuBackend()};
  options.constant_folding = false;
  auto s = runtime::Session::Create(OneNodeModel(c), options);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ((*s)->placement().size(), 1u);
  EXPECT_EQ((*s)->placement()[0].backend, "cpu");
  EXPECT_FALSE((*s)->placement()[0].fallback_reason.empty());
  options.no_fallback = true;
  auto refused = runtime::Session::Create(OneNodeModel(c), options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(refused.status().summary().find("CumSum"), std::string::npos) << refused.status().summary();
}

}  // namespace
}  // namespace vigil::cuda::testing
