// Recorded runs (SessionOptions::device_graphs) without a GPU: a fake
// device backend records and replays the CPU kernels on fixed buffers, and
// every output is compared with a CPU-only session on the same inputs.
#include <cmath>
#include <cstring>
#include <memory>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "runtime/session.h"
#include "recording_fake_backend.h"
#include "../ir/graph_builder.h"

namespace vigil::runtime {
namespace {

using namespace vigil::ir::testing;
using ir::DataType;
using testing::FakeDeviceBackend;
using testing::RecordingFakeBackend;

ir::Tensor Floats(std::string name, std::vector<int64_t> dims, float scale) {
  std::vector<float> v(ElementsOf(dims));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * std::cos(0.7f * static_cast<float>(i) + 0.3f);
  return OwnedInitializer(std::move(name), DataType::kFloat32, std::move(dims), std::move(v));
}

ir::Tensor Int64s(std::string name, std::vector<int64_t> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return OwnedInitializer(std::move(name), DataType::kInt64, {n}, std::move(values));
}

// x [N, 8] -> MatMul(w [8,6]) -> Add(b) -> Relu -> h; y = Softmax(h);
// z = Reshape(h, [-1, 2, 3]) (a view of an intermediate as a graph output);
// s = Sigmoid(x) (reads the input directly).
ir::Model SmallModel() {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "small";
  ir::ValueInfo x = TensorValue("x", DataType::kFloat32, {0, 8});
  x.type.shape.dims[0] = ir::Dim::Symbolic("N");
  m.graph.inputs = {x};
  m.graph.outputs = {TensorValue("y", DataType::kFloat32, {}), TensorValue("z", DataType::kFloat32, {}),
                     TensorValue("s", DataType::kFloat32, {})};
  for (ir::ValueInfo& out : m.graph.outputs) out.type.shape.rank_known = false;
  m.graph.initializers = {Floats("w", {8, 6}, 0.5f), Floats("b", {6}, 0.1f), Int64s("shape", {-1, 2, 3})};
  m.graph.nodes = {MakeNode("MatMul", {"x", "w"}, {"p"}, "fc"), MakeNode("Add", {"p", "b"}, {"a"}, "bias"),
                   MakeNode("Relu", {"a"}, {"h"}, "relu"),     MakeNode("Softmax", {"h"}, {"y"}, "softmax"),
                   MakeNode("Reshape", {"h", "shape"}, {"z"}, "view"), MakeNode("Sigmoid", {"x"}, {"s"}, "sig")};
  return m;
}

std::unique_ptr<Session> Make(std::shared_ptr<const Backend> device, bool graphs) {
  SessionOptions o;
  if (device) o.backends.push_back(device);
  o.backends.push_back(cpu::MakeCpuBackend());
  o.device_graphs = graphs;
  auto s = Session::Create(SmallModel(), std::move(o));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

std::vector<float> Input(int64_t n, float phase) {
  std::vector<float> x(static_cast<size_t>(n) * 8);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i) + phase);
  return x;
}

// All outputs of one run, flattened in order, with the shapes checked.
std::vector<float> RunOnce(const Session& s, int64_t n, float phase) {
  std::vector<float> x = Input(n, phase);
  auto out = s.Run({{"x", DataType::kFloat32, {n, 8}, x.data(), x.size() * 4, ""}});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return {};
  EXPECT_EQ(out->size(), 3u);
  std::vector<float> all;
  for (const NamedTensor& t : *out) {
    EXPECT_TRUE(t.tensor.on_host()) << t.name;
    all.insert(all.end(), t.tensor.data<float>(), t.tensor.data<float>() + t.tensor.element_count());
  }
  EXPECT_EQ(all.size(), static_cast<size_t>(n) * (6 + 6 + 8));
  return all;
}

void ExpectSame(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_FALSE(got.empty()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << what << " element " << i;
    ASSERT_NEAR(got[i], want[i], 1e-6f) << what << " element " << i;
  }
}

bool HasNote(const Session& s, const std::string& part) {
  for (const std::string& note : s.DeviceGraphNotes()) {
    if (note.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(CapturedRun, RecordsOnTheSecondRunAndReplaysNewInputs) {
  auto fake = std::make_shared<RecordingFakeBackend>();
  auto graphs = Make(fake, /*graphs=*/true);
  auto reference = Make(nullptr, false);
  ASSERT_TRUE(graphs && reference);

  ExpectSame(RunOnce(*graphs, 4, 0.0f), RunOnce(*reference, 4, 0.0f), "first run (normal)");
  EXPECT_EQ(fake->begin_calls, 0);
  EXPECT_TRUE(graphs->DeviceGraphNotes().empty());
  int normal_nodes = fake->normal_node_runs;
  EXPECT_GT(normal_nodes, 0);

  ExpectSame(RunOnce(*graphs, 4, 1.0f), RunOnce(*reference, 4, 1.0f), "second run (recorded, replayed)");
  EXPECT_EQ(fake->begin_calls, 1);
  EXPECT_EQ(fake->replays, 1);
  // Different values again: the replay must read the new input.
  ExpectSame(RunOnce(*graphs, 4, 2.5f), RunOnce(*reference, 4, 2.5f), "third run (replayed)");
  ExpectSame(RunOnce(*graphs, 4, -1.0f), RunOnce(*reference, 4, -1.0f), "fourth run (replayed)");
  EXPECT_EQ(fake->begin_calls, 1);
  EXPECT_EQ(fake->replays, 3);
  EXPECT_EQ(fake->normal_node_runs, normal_nodes);  // nothing ran outside the recording
  EXPECT_TRUE(HasNote(*graphs, "replaying a recording")) << ::testing::PrintToString(graphs->DeviceGraphNotes());
}

TEST(CapturedRun, EachInputShapeGetsItsOwnRecording) {
  auto fake = std::make_shared<RecordingFakeBackend>();
  auto graphs = Make(fake, true);
  auto reference = Make(nullptr, false);
  ASSERT_TRUE(graphs && reference);
  for (int round = 0; round < 3; ++round) {
    float phase = 0.5f * static_cast<float>(round);
    ExpectSame(RunOnce(*graphs, 1, phase), RunOnce(*reference, 1, phase), "batch 1");
    ExpectSame(RunOnce(*graphs, 5, phase), RunOnce(*reference, 5, phase), "batch 5");
  }
  EXPECT_EQ(fake->begin_calls, 2);
  EXPECT_EQ(fake->replays, 4);
}

TEST(CapturedRun, DeviceInputsAreCopiedIntoTheRecordedBuffers) {
  auto fake = std::make_shared<RecordingFakeBackend>();
  auto graphs = Make(fake, true);
  auto reference = Make(nullptr, false);
  ASSERT_TRUE(graphs && reference);
  for (float phase : {0.0f, 0.7f, 1.9f}) {
    std::vector<float> x = Input(3, phase);
    auto host = Tensor::Allocate(DataType::kFloat32, {3, 8});
    ASSERT_TRUE(host.ok());
    std::memcpy(host->raw_data(), x.data(), x.size() * 4);
    auto on_device = graphs->UploadInput(*host);
    ASSERT_TRUE(on_device.ok()) << on_device.status().ToString();
    InputBinding b{"x", DataType::kFloat32, {3, 8}, on_device->raw_data(), x.size() * 4, "", Device::kCuda};
    auto out = graphs->Run({b});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<float> got;
    for (const NamedTensor& t : *out) got.insert(got.end(), t.tensor.data<float>(), t.tensor.data<float>() + t.tensor.element_count());
    ExpectSame(got, RunOnce(*reference, 3, phase), "device input");
  }
  EXPECT_EQ(fake->replays, 2);
}

TEST(CapturedRun, ABackendThatCannotRecordRunsNormally) {
  auto fake = std::make_shared<FakeDeviceBackend>();  // base Backend: BeginCapture is Unsupported
  auto graphs = Make(fake, true);
  auto reference = Make(nullptr, false);
  ASSERT_TRUE(graphs && reference);
  for (float phase : {0.0f, 1.0f, 2.0f}) {
    ExpectSame(RunOnce(*graphs, 2, phase), RunOnce(*reference, 2, phase), "unrecordable backend");
  }
  EXPECT_TRUE(HasNote(*graphs, "not used")) << ::testing::PrintToString(graphs->DeviceGraphNotes());
  EXPECT_TRUE(HasNote(*graphs, "cannot record")) << ::testing::PrintToString(graphs->DeviceGraphNotes());
}

TEST(CapturedRun, AFailedRecordingFallsBackOnceAndSaysWhy) {
  auto fake = std::make_shared<RecordingFakeBackend>();
  fake->fail_while_recording = "Softmax";
  auto graphs = Make(fake, true);
  auto reference = Make(nullptr, false);
  ASSERT_TRUE(graphs && reference);
  for (float phase : {0.0f, 1.0f, 2.0f, 3.0f}) {
    ExpectSame(RunOnce(*graphs, 2, phase), RunOnce(*reference, 2, phase), "after a failed recording");
  }
  EXPECT_EQ(fake->begin_calls, 1);  // not retried at the same shapes
  EXPECT_EQ(fake->replays, 0);
  EXPECT_TRUE(HasNote(*graphs, "Softmax cannot be recorded")) << ::testing::PrintToString(graphs->DeviceGraphNotes());
}

TEST(CapturedRun, NotUsedWhenANodeRunsOnTheCpu) {
  // A device backend that refuses Softmax: that node falls back to the CPU.
  class NoSoftmax : public RecordingFakeBackend {
   public:
    bool Supports(const ir::Node& node, int64_t opset) const override {
      return node.op_type != "Softmax" && RecordingFakeBackend::Supports(node, opset);
    }
  };
  auto fake = std::make_shared<NoSoftmax>();
  auto graphs = Make(fake, true);
  auto reference = Make(nullptr, false);
  ASSERT_TRUE(graphs && reference);
  for (float phase : {0.0f, 1.0f, 2.0f}) {
    ExpectSame(RunOnce(*graphs, 2, phase), RunOnce(*reference, 2, phase), "partitioned");
  }
  EXPECT_EQ(fake->begin_calls, 0);
  EXPECT_TRUE(HasNote(*graphs, "runs on the cpu backend")) << ::testing::PrintToString(graphs->DeviceGraphNotes());
}

TEST(CapturedRun, OffByDefault) {
  auto fake = std::make_shared<RecordingFakeBackend>();
  auto plain = Make(fake, /*graphs=*/false);
  ASSERT_TRUE(plain);
  for (float phase : {0.0f, 1.0f, 2.0f}) RunOnce(*plain, 2, phase);
  EXPECT_EQ(fake->begin_calls, 0);
  EXPECT_TRUE(plain->DeviceGraphNotes().empty());
}

}  // namespace
}  // namespace vigil::runtime
