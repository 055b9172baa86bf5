// Issue 17's rule, asserted: the first line of every failure names the most
// likely cause and its fix; the symptom (a status, a mismatch) follows. One
// test per class of failure, through the `vigil` command or the library as a
// user meets it. The program ends by printing the table of first lines.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <regex>

#include <gtest/gtest.h>

#include "run_vigil.h"
#include "scenario_support.h"
#include "support/onnx_builder.h"
#include "vigil/vigil.hpp"

namespace vigil::scenarios {
namespace {

using testing::CommandResult;
using testing::MakeGraph;
using testing::MakeModel;
using testing::MakeNode;
using testing::MakeValueInfo;
using testing::RunVigil;

// image float32[1,3,224,224] -> Relu -> out
std::string ImageModel() {
  static const std::string path = [] {
    const std::string p = Scratch("image_model.onnx").string();
    testing::WriteFile(p, MakeModel(MakeGraph("g", {MakeNode("Relu", {"image"}, {"out"})},
                                              {MakeValueInfo("image", 1, {1, 3, 224, 224})},
                                              {MakeValueInfo("out", 1, {1, 3, 224, 224})})));
    return p;
  }();
  return path;
}

// The same with a symbolic batch "N".
std::string BatchModel() {
  const std::string p = Scratch("batch_model.onnx").string();
  testing::WriteFile(p, MakeModel(MakeGraph("g", {MakeNode("Relu", {"image"}, {"out"})},
                                            {MakeValueInfo("image", 1, {"N", 3, 224, 224})},
                                            {MakeValueInfo("out", 1, {"N", 3, 224, 224})})));
  return p;
}

// x[1,4] -> <op in ai.vigil.testing> -> y (test ops: VIGIL_ENABLE_TEST_OPS=1).
std::string TestOpModel(const std::string& op) {
  testing::NodeOptions o;
  o.name = "faulty";
  o.domain = "ai.vigil.testing";
  const std::string p = Scratch(op + ".onnx").string();
  testing::WriteFile(p, MakeModel(MakeGraph("g", {MakeNode(op, {"x"}, {"y"}, {}, o)},
                                            {MakeValueInfo("x", 1, {1, 4})}, {MakeValueInfo("y", 1, {1, 4})}),
                                  {{"", 17}, {"ai.vigil.testing", 1}}));
  return p;
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_.c_str(), old_->c_str(), 1);
    else unsetenv(name_.c_str());
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// The first line of stderr (text errors), recorded for the table.
std::string FirstLineOf(const std::string& failure_class, const CommandResult& r, int exit_code = 1) {
  EXPECT_FALSE(r.signaled) << r.err;
  EXPECT_EQ(r.exit_code, exit_code) << r.out << r.err;
  const std::string line = FirstLine(r.err);
  Record(failure_class, line);
  return line;
}

std::string Input(const std::string& path) { return "image=" + path; }

// ---- inputs ---------------------------------------------------------------

TEST(FirstLine, WrongDtype) {
  const std::string npy = WriteNpy("f64.npy", "<f8", {1, 3, 224, 224}, 3 * 224 * 224, 8);
  EXPECT_EQ(FirstLineOf("wrong dtype (.npy of float64)", RunVigil({"run", ImageModel(), "--input", Input(npy)})),
            "error [InvalidInput]: input 'image' is float64 where float32 is expected: numpy's default dtype "
            "— fix: convert before saving: x.astype(np.float32)");
}

TEST(FirstLine, WrongShape) {
  const std::string npy = WriteNpy("small.npy", "<f4", {1, 3, 200, 200}, 3 * 200 * 200, 4);
  EXPECT_EQ(FirstLineOf("wrong shape (200 × 200 for 224 × 224)", RunVigil({"run", ImageModel(), "--input", Input(npy)})),
            "error [InvalidInput]: input 'image' was prepared for another model or another size (resize, "
            "crop, sequence length): [1,3,200,200] given, the model takes [1,3,224,224] — fix: give the "
            "input with shape [1,3,224,224]");
}

TEST(FirstLine, NhwcImage) {
  const std::string npy = WriteNpy("nhwc.npy", "<f4", {1, 224, 224, 3}, 3 * 224 * 224, 4);
  EXPECT_EQ(FirstLineOf("NHWC image for an NCHW input", RunVigil({"run", ImageModel(), "--input", Input(npy)})),
            "error [InvalidInput]: input 'image' [1,224,224,3] looks like an NHWC image; the model takes "
            "NCHW [1,3,224,224] — fix: transpose to NCHW: np.transpose(x, (0, 3, 1, 2)) (in C++, "
            "cv::dnn::blobFromImage does this)");
}

// Seed 003: a 640 × 480 image's 921,600 floats given for [1,3,224,224].
TEST(FirstLine, BufferSizeNpyWithTheModelsShapeInItsHeader) {
  const std::string npy = WriteNpy("seed3_header.npy", "<f4", {1, 3, 224, 224}, 921600, 4);
  EXPECT_EQ(FirstLineOf("buffer size: .npy, header [1,3,224,224], 921,600 floats",
                        RunVigil({"run", ImageModel(), "--input", Input(npy)})),
            "error [InvalidInput]: the pixels of a 640 × 480 image written under the model's shape — fix: "
            "resize the image to 224 × 224 before saving it");
}

TEST(FirstLine, BufferSizePb) {
  const std::string pb = WritePb("seed3.pb", {1, 3, 224, 224}, 921600);
  EXPECT_EQ(FirstLineOf("buffer size: .pb, dims [1,3,224,224], 921,600 floats",
                        RunVigil({"run", ImageModel(), "--input", Input(pb)})),
            "error [InvalidInput]: the pixels of a 640 × 480 image written under the model's shape — fix: "
            "resize the image to 224 × 224 before saving it");
}

TEST(FirstLine, BufferSizeFlatNpy) {
  const std::string npy = WriteNpy("seed3_flat.npy", "<f4", {921600}, 921600, 4);
  EXPECT_EQ(FirstLineOf("buffer size: flat .npy [921600]", RunVigil({"run", ImageModel(), "--input", Input(npy)})),
            "error [InvalidInput]: input 'image' holds the pixels of a 640 × 480 image: 921600 values = 3 × "
            "640 × 480, the model "
            "takes 224 × 224 (150528 values) — fix: resize the image to 224 × 224 before filling the tensor, "
            "then give it the shape [1,3,224,224]");
}

TEST(FirstLine, BufferSizeThroughTheLibrary) {
  vigil::Session session(ImageModel());
  std::vector<float> image(921600, 0.5f);
  try {
    session.Run({vigil::TensorRef::Of("image", image.data(), image.size(), {1, 3, 224, 224})});
    FAIL() << "a buffer of the wrong size ran";
  } catch (const vigil::Error& e) {
    const std::string text = e.what();
    Record("buffer size: the library (vigil::Session::Run, 921,600 floats)", FirstLine(text));
    EXPECT_EQ(FirstLine(text), "error [InvalidInput]: " + e.headline());
    EXPECT_EQ(e.headline(), "input 'image': the buffer holds channels*height*width elements of a 640 × 480 image, the shape "
            "says 224 × 224 — fix: resize the image to 224 × 224 before filling the tensor, and compute the "
            "element count from the tensor's shape, not from the image");
  }
}

// ---- the model ------------------------------------------------------------

TEST(FirstLine, UnknownOp) {
  const std::string p = Scratch("unknown_op.onnx").string();
  testing::WriteFile(p, MakeModel(MakeGraph("g", {MakeNode("Convolution", {"x"}, {"y"})},
                                            {MakeValueInfo("x", 1, {1, 4})}, {MakeValueInfo("y", 1, {1, 4})})));
  EXPECT_EQ(FirstLineOf("unknown op (Convolution in the default domain)", RunVigil({"run", p})), "error [InvalidModel]: 'Convolution' is not an ONNX operator: a custom op exported without a "
            "domain of its own — fix: give the custom op its own domain and a runtime that implements it, or "
            "replace it with standard ONNX ops before export");
}

// ---- options --------------------------------------------------------------

TEST(FirstLine, OptionValueCheckedEvenWhenUnused) {
  CommandResult r = RunVigil({"run", ImageModel(), "--gpu-mem-limit", "banana"});
  EXPECT_EQ(FirstLineOf("option value (--gpu-mem-limit banana, CPU run)", r, 2), "--gpu-mem-limit: 'banana' is not a size: write bytes or use K, M or G (512M, 2G)");
}

// ---- the GPU stack ----------------------------------------------------------

bool DriverLoads() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

TEST(FirstLine, NoDriver) {
#ifndef VIGIL_BUILD_CUDA
  GTEST_SKIP() << "built without the CUDA module";
#endif
  if (DriverLoads()) GTEST_SKIP() << "libcuda.so.1 loads here: this machine has a driver";
  EXPECT_EQ(FirstLineOf("no NVIDIA driver", RunVigil({"run", ImageModel(), "--backend", "cuda", "--no-fallback"})),
            "error [Environment]: no NVIDIA driver: libcuda.so.1 cannot be loaded, so nothing can run on a "
            "GPU; this is the cause that blocks GPU use — fix: install the NVIDIA driver (e.g. `apt install "
            "nvidia-driver-580` or the .run installer) and reboot; in a container, start it with the NVIDIA "
            "Container Toolkit (`docker run --gpus all ...`)");
}

TEST(FirstLine, HiddenGpus) {
#ifndef VIGIL_BUILD_CUDA
  GTEST_SKIP() << "built without the CUDA module";
#endif
  // A driver (the fake H100 libcuda) that the run finds first, and
  // CUDA_VISIBLE_DEVICES="".
  ScopedEnv path("LD_LIBRARY_PATH", FakeLibraryFolder("hidden", {"fake_cuda_h100"}).c_str());
  ScopedEnv visible("CUDA_VISIBLE_DEVICES", "");
  EXPECT_EQ(FirstLineOf("hidden GPUs (CUDA_VISIBLE_DEVICES=\"\")",
                        RunVigil({"run", ImageModel(), "--backend", "cuda", "--no-fallback"})),
            "error [Environment]: CUDA_VISIBLE_DEVICES=\"\" hides every GPU, so CUDA sees no device — fix: "
            "unset CUDA_VISIBLE_DEVICES, or set it to existing device indices or UUIDs (e.g. "
            "CUDA_VISIBLE_DEVICES=0)");
}

// The folder the CUDA module loads `library` from, read from `ldd`.
std::string FolderOf(const std::string& library) {
#ifdef VIGIL_BUILD_CUDA
  const ProgramResult ldd = RunProgram({"ldd", VIGIL_CUDA_MODULE_FILE});
  const size_t at = ldd.out.find(library + " => /");
  if (at == std::string::npos) return {};
  const size_t start = at + library.size() + 4;
  const std::string path = ldd.out.substr(start, ldd.out.find(' ', start) - start);
  return path.substr(0, path.rfind('/'));
#else
  (void)library;
  return {};
#endif
}

// cuDNN absent: its files hidden in a private mount namespace.
TEST(FirstLine, MissingCudnn) {
#ifndef VIGIL_BUILD_CUDA
  GTEST_SKIP() << "built without the CUDA module";
#else
  const std::string folder = FolderOf("libcudnn.so.9");
  if (folder.empty()) GTEST_SKIP() << "ldd does not show where the CUDA module finds libcudnn.so.9";
  if (!RunProgram({"unshare", "-m", "true"}).ok || RunProgram({"unshare", "-m", "true"}).exit_code != 0) {
    GTEST_SKIP() << "no private mount namespaces here (unshare -m needs CAP_SYS_ADMIN)";
  }
  const ProgramResult r = RunProgram({"unshare", "-m", VIGIL_HIDE_LIBRARIES, folder, "libcudnn", VIGIL_BINARY, "run",
                                      ImageModel(), "--backend", "cuda", "--no-fallback"});
  EXPECT_TRUE(r.ok) << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  Record("missing cuDNN (hidden in a mount namespace)", FirstLine(r.err));
  // The CUDA major in the fix is the machine's (its CUDA runtime's).
  EXPECT_TRUE(std::regex_match(
      FirstLine(r.err),
      std::regex(R"(error \[Environment\]: cuDNN is not found \(libcudnn\.so\.9 or libcudnn\.so\.8\); vigil's CUDA )"
                 R"(backend needs cuDNN 9 — fix: install cuDNN 9 for CUDA ([0-9]+) \(`apt install cudnn9-cuda-\1` or )"
                 R"(`pip install nvidia-cudnn-cu\1`\) and put its lib folder on LD_LIBRARY_PATH)")))
      << r.err;
#endif
}

// ---- failures while running -------------------------------------------------

TEST(FirstLine, CrashInAKernelUnderIsolation) {
  ScopedEnv ops("VIGIL_ENABLE_TEST_OPS", "1");
  const std::string x = WriteNpy("x.npy", "<f4", {1, 4}, 4, 4);
  EXPECT_EQ(FirstLineOf("crash in a kernel (--isolate)",
                        RunVigil({"run", TestOpModel("Crash"), "--input", "x=" + x, "--isolate"})),
            "error [Crashed]: node Crash 'faulty' died of SIGSEGV in vigil's cpu kernel: a bug in vigil — "
            "fix: shrink the model to the failing node: vigil reduce MODEL --check \"vigil run --isolate "
            "{model} {inputs}\"");
}

TEST(FirstLine, OutOfMemory) {
  const std::string line =
      FirstLineOf("out of memory (a batch of 200,000,000 images)",
                  RunVigil({"bench", BatchModel(), "--dim", "N=200000000", "--iters", "1", "--warmup", "0"}));
  // The machine's memory is in the line; the rest is fixed.
  EXPECT_TRUE(std::regex_match(line, std::regex(R"(error \[OutOfMemory\]: input 'image' of shape \[200000000,3,224,224\] )"
                                                R"(would take 120422\.4 GB, more than this machine's [0-9]+\.[0-9] GB )"
                                                R"(of memory — fix: choose smaller --dim values)")))
      << line;
}

TEST(FirstLine, Nondeterminism) {
  ScopedEnv ops("VIGIL_ENABLE_TEST_OPS", "1");
  CommandResult r = RunVigil({"compare", TestOpModel("Jitter"), "--backends", "cpu,cpu", "--repeat", "3"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::string line = FirstLine(r.out);  // the report is on stdout
  Record("nondeterminism (compare --repeat)", line);
  EXPECT_EQ(line, "FAIL: nondeterministic, and vigil's cpu backend is meant to be deterministic: a kernel races or "
            "reads memory it never wrote, a bug in vigil — fix: report it with the model (`vigil reduce` "
            "shrinks it to the node); repeats 2, 3 are not bitwise identical to repeat 1 in 'y' (1 "
            "element(s), max difference 0.002); disagrees with the cpu reference beyond tolerance in repeats "
            "1, 2, 3, by amounts that change between repeats");
}

}  // namespace
}  // namespace vigil::scenarios

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  vigil::scenarios::PrintTable();
  return result;
}
