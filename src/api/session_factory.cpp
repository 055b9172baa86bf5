#include "api/session_factory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "base/dev_switch.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernel_type_constraints.h"
#include "backends/module/backend_module.h"
#include "base/mapped_file.h"
#include "ir/validate.h"
#include "onnx/reader.h"

namespace vigil::api {

bool SessionConfig::wants_cuda() const {
  for (BackendKind b : backends) {
    if (b == BackendKind::kCuda) return true;
  }
  return false;
}

bool SessionConfig::cpu_fallback() const {
  if (backends.empty()) return true;
  for (BackendKind b : backends) {
    if (b == BackendKind::kCpu) return true;
  }
  return false;
}

Status ValidateConfig(const SessionConfig& config) {
  for (size_t i = 0; i < config.backends.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (config.backends[i] == config.backends[j]) {
        return InvalidInputError("backend {} is listed twice", config.backends[i] == BackendKind::kCuda ? "cuda" : "cpu")
            .WithFix("list each backend once, in order of preference: cuda, cpu");
      }
    }
  }
  if (!config.backends.empty() && config.backends[0] == BackendKind::kCpu && config.wants_cuda()) {
    return InvalidInputError("the CPU backend is listed before CUDA, so no node would run on the GPU")
        .WithFix("list cuda first and cpu after it as the fallback");
  }
  if (config.device_id < 0) {
    return InvalidInputError("device id {} is negative", config.device_id).WithFix("use a CUDA device ordinal: 0, 1, ...");
  }
  if (config.isolate_timeout_s < 0) {
    return InvalidInputError("isolate timeout {} s is negative", config.isolate_timeout_s);
  }
  if (config.intra_op_num_threads < 0) {
    return InvalidInputError("intra_op_num_threads is {}, a negative thread count", config.intra_op_num_threads)
        .WithFix("0 uses every core for large products, 1 runs each node on the calling thread alone, N uses at "
                 "most N threads");
  }
  return Status::Ok();
}

Result<ir::Model> ReadModelFile(const std::string& path) {
  VIGIL_ASSIGN_OR_RETURN(ir::Model model, onnx::ReadModel(path));
  Status valid = ir::ValidateModel(model);
  if (!valid.ok()) return valid.WithFact("model", path);
  return model;
}

Result<int> ModelBytesInMemfd(std::span<const uint8_t> bytes) {
  int fd = memfd_create("vigil-model", MFD_CLOEXEC);
  if (fd < 0) return EnvironmentError("cannot hold the model in memory: memfd_create failed");
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n <= 0) {
      ::close(fd);
      return EnvironmentError("cannot hold the model in memory: writing {} bytes failed", bytes.size());
    }
    written += static_cast<size_t>(n);
  }
  return fd;
}

Result<ir::Model> ReadModelBytes(const void* data, size_t size) {
  if (data == nullptr || size == 0) {
    return InvalidInputError("the model bytes are empty").WithFix("pass the contents of an .onnx file");
  }
  // An anonymous in-memory file, so the model owns its bytes the way a mapped
  // file does (initializers point into it).
  VIGIL_ASSIGN_OR_RETURN(int fd, ModelBytesInMemfd({static_cast<const uint8_t*>(data), size}));
  auto file = MappedFile::FromFd(fd, "<model bytes>");
  ::close(fd);
  if (!file.ok()) return file.status();
  std::shared_ptr<const MappedFile> mapped = std::move(file).value();
  VIGIL_ASSIGN_OR_RETURN(ir::Model model, onnx::ReadModelFromBytes(mapped->bytes(), "<model bytes>", ""));
  model.file = mapped;
  Status valid = ir::ValidateModel(model);
  if (!valid.ok()) return valid.WithFact("model", "<model bytes>");
  return model;
}

namespace {

Result<backends::LoadedBackend> LoadCuda(const SessionConfig& config) {
  backends::CudaBackendOptions cuda;
  cuda.device = config.device_id;
  cuda.allow_tf32 = config.allow_tf32;
  cuda.allow_tf32x3 = config.allow_tf32x3;
  cuda.measure_first_run = config.measure_first_run;
  cuda.tf32x3_convolutions = config.tf32x3_convolutions;
  cuda.deterministic = config.deterministic;
  cuda.tune = config.tune;
  cuda.tuning_cache = config.tuning_cache_file;
  cuda.memory_limit = config.gpu_mem_limit;
  cuda.sync_each_node = config.enable_profiling;
  cuda.module_path = config.cuda_module_path;
  if (!config.cudnn_log_file.empty()) {
    // cuDNN reads its logging variables when it starts, so they are set
    // before the module (which links libcudnn) is loaded.
    setenv("CUDNN_LOGLEVEL_DBG", "3", 1);
    setenv("CUDNN_LOGDEST_DBG", config.cudnn_log_file.c_str(), 1);
  }
  return backends::LoadCudaBackend(cuda);
}

}  // namespace

Result<AssembledSession> AssembleSession(ir::Model model, const SessionConfig& config) {
  VIGIL_RETURN_IF_ERROR(ValidateConfig(config));
  AssembledSession out;
  runtime::SessionOptions options;
  options.constant_folding = config.constant_folding;
  if (config.wants_cuda()) {
    VIGIL_ASSIGN_OR_RETURN(backends::LoadedBackend loaded, LoadCuda(config));
    out.cuda_module_path = loaded.module_path;
    out.cuda_description = loaded.description;
    options.backends.push_back(loaded.backend);
    options.no_fallback = !config.cpu_fallback();
    options.conv_layout = config.layout;
    // float32 convolutions run channels-last: with TF32, cuDNN's TF32
    // tensor-core engines want NHWC as its float16 ones do (bench/results/
    // issue19_h200_tf32_nhwc_bert.md), and so do 3xTF32 ones
    // (tf32x3_convolutions; bench/results/conv_tf32x3_h200.md). Exact ones
    // (TF32 off) run there as cuBLASLt products with their bias, residual
    // and Relu fused (conv_gemm.h), all but the 3x3 ones of stride 1 over
    // many pixels, which cuDNN keeps (bench/results/conv_gemm_h200.md).
    // VIGIL_NHWC_FLOAT32=0 keeps every float32 convolution NCHW;
    // VIGIL_CONV_GEMM=0 keeps exact ones NCHW on cuDNN, with their epilogue
    // in one pass (ai.vigil.FusedConv), as before 2026-11-28
    // (bench/results/exact_float32_nchw_h200.md), to measure the difference.
    options.nhwc_float32 = DevSwitchOn("VIGIL_NHWC_FLOAT32") &&
                           (config.allow_tf32 || config.tf32x3_convolutions || DevSwitchOn("VIGIL_CONV_GEMM"));
    options.device_graphs = config.cuda_graphs;
  }
  if (!config.wants_cuda()) {
    // A CPU session lays float32 convolutions out channels-last where the
    // CPU's oneDNN path takes them (CpuBackend::PrefersChannelsLast): no
    // reorders between convolutions, and their Add and Relu/Clip(0, 6)
    // fused into them.
    options.conv_layout = config.layout;
    options.nhwc_float32 = true;
    // BatchNormalization folded into its Conv, as onnxruntime's CPU provider
    // does: the NHWC pass would otherwise stop at each one.
    options.fold_batch_norm = config.layout != runtime::ConvLayout::kAsModel;
    // SiLU and GELU as one pass each (EfficientNet's 49 SiLU pairs were 40%
    // of its time).
    options.fuse_activations = config.layout != runtime::ConvLayout::kAsModel;
  }
  if (config.run_as_float16) options.float16_inputs = cpu::TakesFloat16Input;
  // The CPU backend is always present: it folds constants at load and, when
  // fallback is off, still runs nothing (no_fallback fails at load instead).
  options.backends.push_back(cpu::MakeCpuBackend(config.intra_op_num_threads));
  const std::string name = model.path;
  auto session = runtime::Session::Create(std::move(model), std::move(options));
  if (!session.ok()) return std::move(session).TakeStatus().WithFact("model", name);
  out.session = std::move(session).value();
  for (std::string_view b : {std::string_view("cuda"), std::string_view("cpu")}) {
    for (const runtime::NodePlacement& p : out.session->placement()) {
      if (p.backend == b) {
        out.backends.emplace_back(b);
        break;
      }
    }
  }
  return out;
}

Result<AssembledSession> AssembleSession(const std::string& model_path, const SessionConfig& config) {
  VIGIL_RETURN_IF_ERROR(ValidateConfig(config));
  VIGIL_ASSIGN_OR_RETURN(ir::Model model, ReadModelFile(model_path));
  return AssembleSession(std::move(model), config);
}

}  // namespace vigil::api
