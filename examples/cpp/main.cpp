// vigil from C++ (include/vigil/vigil.hpp): run a model on a .npy file,
// write its outputs as .npy, and show what vigil says about two classic input
// mistakes.
//
//   vigil_example_cpp MODEL.onnx INPUT.npy OUTPUT_DIR [cpu|cuda]
//
// Every failure is a vigil::Error; e.what() is the whole diagnosis (summary
// first, then facts, likely causes and fixes). Exits 0 when the model ran and
// both mistakes were refused.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <vigil/vigil.hpp>

namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// The output's name as a file name, the way `vigil run --output-dir` writes
// it: characters outside [A-Za-z0-9._-] become '_'.
std::string SafeFileName(const std::string& name) {
  std::string s;
  for (char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    s.push_back(ok ? c : '_');
  }
  return s + ".npy";
}

// The model input's shape with symbolic dims (-1) taken as 1.
std::vector<int64_t> ConcreteShape(const vigil::IoInfo& input) {
  std::vector<int64_t> shape = input.dims;
  for (int64_t& d : shape) d = d < 0 ? 1 : d;
  return shape;
}

size_t ElementCount(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

// Seed 003: the ONNX Runtime code was
//   Ort::Value::CreateTensor<float>(info, img.data, img.channels() * img.total(), shape, 4)
// with a 640x480 camera frame and a smaller model input: an intermittent
// access violation in the host-to-device copy. The same call in vigil:
bool WrongElementCount(const vigil::Session& session, const vigil::IoInfo& input) {
  const std::vector<int64_t> shape = ConcreteShape(input);
  const int64_t channels = shape.size() == 4 ? shape[1] : 3;
  std::vector<float> frame(static_cast<size_t>(channels) * 640 * 480);  // img.channels() * img.total()
  std::cout << "\n== seed 003: " << frame.size() << " floats (" << channels << " x 640 x 480) for input '"
            << input.name << "' " << ShapeText(shape) << "\n";
  try {
    session.Run({vigil::TensorRef::Of(input.name, frame.data(), frame.size(), shape)});
    std::cout << "not refused?!\n";
    return false;
  } catch (const vigil::Error& e) {
    std::cout << e.what() << "\n";
    return e.code() == vigil::ErrorCode::kInvalidInput;
  }
}

// Seed 000: np.int32 data where the model takes float32. Same byte size, so
// only the dtype can tell.
bool WrongDtype(const vigil::Session& session, const vigil::IoInfo& input) {
  const std::vector<int64_t> shape = ConcreteShape(input);
  std::vector<int32_t> data(ElementCount(shape), 1);
  std::cout << "\n== seed 000: int32 data for the " << vigil::DTypeName(input.dtype) << " input '" << input.name
            << "'\n";
  try {
    session.Run({vigil::TensorRef::Of(input.name, data.data(), data.size(), shape)});
    std::cout << "not refused?!\n";
    return false;
  } catch (const vigil::Error& e) {
    std::cout << e.what() << "\n";
    return e.code() == vigil::ErrorCode::kInvalidInput;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: " << argv[0] << " MODEL.onnx INPUT.npy OUTPUT_DIR [cpu|cuda]\n";
    return 2;
  }
  const std::string model_path = argv[1], input_path = argv[2], output_dir = argv[3];
  std::cout << "vigil " << vigil::Version() << "\n";

  try {
    // CPU (the default), or CUDA with the CPU for nodes it cannot run.
    vigil::SessionOptions options;
    if (argc > 4 && std::string(argv[4]) == "cuda") options.backends = {vigil::Backend::kCuda, vigil::Backend::kCpu};
    vigil::Session session(model_path, options);

    const std::vector<vigil::IoInfo> inputs = session.Inputs();
    if (inputs.size() != 1 || !inputs[0].rank_known) {
      std::cerr << "this example feeds models with one input of known rank\n";
      return 1;
    }
    const vigil::IoInfo& input = inputs[0];
    std::cout << "model " << model_path << ": input '" << input.name << "' " << vigil::DTypeName(input.dtype)
              << ShapeText(input.dims) << ", runs on " << session.Backends() << "\n";

    // The file, bound to the model's input by name; its path is named in any
    // diagnosis about it.
    vigil::Value file = vigil::ReadTensorFile(input_path);
    vigil::TensorRef x = file.AsInput(input.name);
    x.source = input_path;
    std::vector<vigil::Value> outputs = session.Run({x});

    std::filesystem::create_directories(output_dir);
    std::cout << "outputs (" << outputs.size() << "):\n";
    for (const vigil::Value& out : outputs) {
      const std::string path = (std::filesystem::path(output_dir) / SafeFileName(out.Name())).string();
      vigil::WriteNpy(path, out.AsInput());
      std::cout << "  " << out.Name() << " " << vigil::DTypeName(out.GetDType()) << ShapeText(out.Shape());
      if (out.GetDType() == vigil::DType::kFloat32) {
        std::cout << " first values:";
        for (size_t i = 0; i < out.ElementCount() && i < 5; ++i) std::cout << " " << out.Data<float>()[i];
      }
      std::cout << "\n    -> " << path << "\n";
    }

    // The two mistakes of the user stories, each refused before anything runs.
    bool ok = true;
    if (input.dtype == vigil::DType::kFloat32) {
      ok = WrongElementCount(session, input) && ok;
      ok = WrongDtype(session, input) && ok;
    }
    return ok ? 0 : 1;
  } catch (const vigil::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {  // e.g. std::filesystem errors
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
