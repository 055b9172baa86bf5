// cuDNN 9 statuses: every cudnnStatus_t of cudnn_graph.h (9.19), and what
// each means in each phase. Causes cite what we know from users' reports
// (shared/FACTS.md: onnxruntime and tensorflow issues) where one applies.
#include <fmt/format.h>

#include "doctor/errors/cuda_errors_internal.h"

namespace vigil::doctor::gpu_errors {
namespace {

constexpr GpuStatusInfo kCudnnStatuses[] = {
    {1001, "CUDNN_STATUS_NOT_INITIALIZED", "cuDNN could not initialise (no usable GPU or CUDA context)"},
    {1002, "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH", "cuDNN's sub-libraries come from different releases"},
    {1003, "CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH", "a serialised plan comes from another cuDNN version"},
    {1004, "CUDNN_STATUS_DEPRECATED", "a deprecated cuDNN feature was used"},
    {1005, "CUDNN_STATUS_LICENSE_ERROR", "a licence check failed"},
    {1006, "CUDNN_STATUS_RUNTIME_IN_PROGRESS", "kernels are still running, so the runtime error is not known yet"},
    {1007, "CUDNN_STATUS_RUNTIME_FP_OVERFLOW", "a numerical overflow happened in a cuDNN kernel"},
    {1008, "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED", "a cuDNN sub-library could not be loaded"},
    {2000, "CUDNN_STATUS_BAD_PARAM", "an invalid parameter was passed"},
    {2001, "CUDNN_STATUS_INVALID_VALUE", "an invalid value was passed (deprecated alias of BAD_PARAM)"},
    {2002, "CUDNN_STATUS_BAD_PARAM_NULL_POINTER", "a required pointer was null"},
    {2003, "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER", "a pointer is not aligned as declared"},
    {2004, "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED", "a descriptor was used before it was finalised"},
    {2005, "CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND", "a value is outside its allowed range"},
    {2006, "CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT", "a buffer or array is too small"},
    {2007, "CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH", "the stream does not match the one the handle or plan uses"},
    {2008, "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH", "tensor shapes do not fit the operation"},
    {2009, "CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES", "the same entry (e.g. a tensor unique id) appears twice"},
    {2010, "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE", "an attribute was set or read with the wrong type"},
    {2011, "CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH", "a CUDA graph does not match the plan"},
    {2012, "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE", "a descriptor of the wrong type was passed"},
    {3000, "CUDNN_STATUS_NOT_SUPPORTED", "the operation is not supported here"},
    {3001, "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN", "no engine supports this operation graph pattern"},
    {3002, "CUDNN_STATUS_NOT_SUPPORTED_SHAPE", "the shape is not supported"},
    {3003, "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE", "the data type is not supported"},
    {3004, "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT", "the memory layout is not supported"},
    {3005, "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER", "the CUDA driver is not compatible"},
    {3006, "CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART", "the CUDA runtime is not compatible"},
    {3007, "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH", "this cuDNN has no support for the GPU's architecture"},
    {3008, "CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING", "a runtime library cuDNN needs is missing"},
    {3009, "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE", "the sub-library that implements this is not loaded"},
    {3010, "CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT", "the kernel needs more shared memory than the GPU has"},
    {3011, "CUDNN_STATUS_NOT_SUPPORTED_PADDING", "the padding is not supported"},
    {3012, "CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM", "the kernel cannot be launched with these parameters"},
    {3013, "CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API", "the native CUDA graph API is not supported here"},
    {3014, "CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE", "the dynamic shape is not supported"},
    {4000, "CUDNN_STATUS_INTERNAL_ERROR", "cuDNN failed internally"},
    {4001, "CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED", "a runtime-compiled kernel failed to compile"},
    {4002, "CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE", "cuDNN met an unexpected internal value"},
    {4003, "CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED", "cuDNN could not allocate host memory"},
    {4004, "CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED", "cuDNN could not allocate device memory"},
    {4005, "CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM", "a kernel launch was refused"},
    {4006, "CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED", "a texture object could not be created"},
    {5000, "CUDNN_STATUS_EXECUTION_FAILED", "a GPU kernel failed to execute"},
    {5001, "CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER", "a CUDA driver call inside cuDNN failed"},
    {5002, "CUDNN_STATUS_EXECUTION_FAILED_CUBLAS", "a cuBLAS(Lt) call inside cuDNN failed"},
    {5003, "CUDNN_STATUS_EXECUTION_FAILED_CUDART", "a CUDA runtime call inside cuDNN failed"},
    {5004, "CUDNN_STATUS_EXECUTION_FAILED_CURAND", "a cuRAND call inside cuDNN failed"},
};

bool Early(CallPhase p) { return p == CallPhase::kLibraryLoad || p == CallPhase::kHandleCreation; }

void NotInitialized(CallPhase phase, Translation& t) {
  if (Early(phase) || phase == CallPhase::kUnknown) {
    // onnxruntime#17337 / #26322: NOT_INITIALIZED at cudnnCreate.
    t.code = ErrorCode::kEnvironment;
    t.Because("no usable GPU: none present, CUDA_VISIBLE_DEVICES hides them all, or the GPU is taken in "
              "exclusive-process mode",
              "cudnnCreate initialises the CUDA context on the current device and fails when there is none")
        .Because("the NVIDIA driver is older than the CUDA version this cuDNN was built for",
                 "the usual cause in onnxruntime#17337 and #26322")
        .Because("a cuDNN built for another CUDA major version than the CUDA runtime in use",
                 "cudnnGetCudartVersion() names the CUDA it was built for")
        .Fix(kDoctorFix)
        .Fix("check CUDA_VISIBLE_DEVICES and `nvidia-smi`; update the driver if `vigil doctor` says it is too old");
    return;
  }
  t.Because("a cuDNN handle used after it was destroyed, or on a thread or device it was not created for",
            fmt::format("handle creation worked; NOT_INITIALIZED came during {}", CallPhaseName(phase)))
      .Because("the CUDA context was torn down (process exit, or a device reset)", "the handle outlived its context")
      .Fix(kReportFix);
}

void SublibraryLoading(CallPhase phase, Translation& t) {
  t.code = ErrorCode::kEnvironment;
  std::string which;
  switch (phase) {
    case CallPhase::kLibraryLoad:
    case CallPhase::kHandleCreation: which = "libcudnn_graph, or libcudnn_ops for the legacy API"; break;
    case CallPhase::kDescriptorSetup: which = "libcudnn_graph (the backend API's descriptors)"; break;
    case CallPhase::kPlanChoice:
      which = "libcudnn_heuristic (heuristics) or libcudnn_engines_precompiled / _runtime_compiled (engines)";
      break;
    case CallPhase::kExecution:
      which = "libcudnn_engines_runtime_compiled, which needs NVRTC (libnvrtc), or libcudnn_cnn / _adv";
      break;
    default: which = "one of libcudnn_graph, _heuristic, _engines_precompiled, _engines_runtime_compiled, _ops, _cnn, _adv";
  }
  t.Because("a cuDNN sub-library is missing, or one of its own dependencies cannot be loaded",
            fmt::format("during {} cuDNN loads {}", CallPhaseName(phase), which))
      .Because("the sub-libraries are not in the folder of libcudnn.so.9 and not on the search path",
               "pip's nvidia-cudnn-cu* installs them in site-packages/nvidia/cudnn/lib, which is not searched by "
               "default (onnxruntime#25609)")
      .Fix(kDoctorFix + std::string(": it lists each sub-library, its version and path"))
      .Fix("put the cuDNN lib folder on LD_LIBRARY_PATH, or install the complete cuDNN package");
}

void BadParam(int status, CallPhase phase, Translation& t) {
  std::string what;
  switch (status) {
    case 2002: what = "a required attribute or pointer left null"; break;
    case 2003: what = "a data pointer that is not aligned to the tensor's declared byte alignment"; break;
    case 2004: what = "a descriptor used before cudnnBackendFinalize"; break;
    case 2005: what = "a dimension, stride, count or attribute value outside cuDNN's range"; break;
    case 2006: what = "an array or workspace smaller than cuDNN needs"; break;
    case 2007: what = "a handle or plan used on another stream than it was set up with"; break;
    case 2008: what = "tensor dimensions that do not fit the operation (input, filter and output disagree)"; break;
    case 2009: what = "two tensors with the same unique id in one graph or variant pack"; break;
    case 2010: what = "an attribute set or read with the wrong cudnnBackendAttributeType_t"; break;
    case 2011: what = "a CUDA graph that does not match the plan it is updated from"; break;
    case 2012: what = "a descriptor of the wrong type passed as an attribute"; break;
    default: what = "a parameter cuDNN does not accept";
  }
  switch (phase) {
    case CallPhase::kDescriptorSetup:
    case CallPhase::kPlanChoice:
      t.Because(fmt::format("vigil built a cuDNN descriptor with {}", what),
                fmt::format("cuDNN rejects it during {}; the call and file:line name the descriptor",
                            CallPhaseName(phase)))
          .Fix(kReportFix)
          .Fix(kCpuFallbackFix);
      break;
    case CallPhase::kExecution:
      if (status == 2003 || status == 2002 || status == 2006) {
        t.Because(fmt::format("the variant pack holds {}", what),
                  "execution checks the data pointers and the workspace against the plan")
            .Because("an input buffer or view that starts at an offset the plan did not expect",
                     "cuDNN was told 16-byte alignment");
      } else if (status == 2007) {
        t.Because("a cuDNN handle shared between threads", "cuDNN handles must not be used by two threads at once "
                                                           "(cuDNN's thread-safety rule)");
      } else {
        t.Because(fmt::format("vigil executed a plan with {}", what), "cuDNN rejected the execution call");
      }
      t.Fix(kReportFix).Fix(kCpuFallbackFix);
      break;
    default:
      t.Because(fmt::format("vigil passed {} during {}", what, CallPhaseName(phase)), "cuDNN rejected the call")
          .Fix(kReportFix);
  }
}

void EnvironmentNotSupported(int status, CallPhase phase, Translation& t) {
  t.code = ErrorCode::kEnvironment;
  switch (status) {
    case 3005:
      t.Because("the NVIDIA driver is too old for this cuDNN or for the feature used",
                "cuDNN checked the driver version")
          .Fix(kDoctorFix)
          .Fix("update the NVIDIA driver");
      break;
    case 3006:
      t.Because("the CUDA runtime in use is not the one this cuDNN was built for",
                "cudnnGetCudartVersion() differs from the loaded libcudart's major version")
          .Fix(kDoctorFix)
          .Fix("install the cuDNN build for this CUDA major (e.g. nvidia-cudnn-cu12 for CUDA 12)");
      break;
    case 3007:
      t.Because("this cuDNN has no kernels for the GPU's compute capability",
                "cuDNN 9.11+ drops GPUs below 7.5, cuDNN 9.17 for CUDA 13 supports 7.5 and newer only, and Blackwell "
                "(10.0, 12.0) needs cuDNN 9.7+ (cuDNN support matrix)")
          .Fix(kDoctorFix + std::string(": it compares the GPU with cudnnGetMaxDeviceVersion"))
          .Fix("install a cuDNN release whose support matrix lists this GPU");
      break;
    case 3008:
      t.Because("a runtime library cuDNN needs is missing: NVRTC (libnvrtc) for runtime-compiled engines, or "
                "libcublasLt",
                "cuDNN checks its prerequisites when it first needs them (stable-diffusion-webui#10230: libnvrtc "
                "missing)")
          .Fix(kDoctorFix)
          .Fix("install the CUDA runtime libraries of the same major version (NVRTC and cuBLASLt)");
      break;
    default:  // 3009
      t.Because("CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY loads only libcudnn, libcudnn_graph and "
                "libcudnn_engines_runtime_compiled",
                "under GRAPH_JIT_ONLY every legacy-API call returns SUBLIBRARY_UNAVAILABLE, even with all "
                "sub-libraries present (observed on our H200)")
          .Because("a partial cuDNN install: the sub-library for this call is absent",
                   fmt::format("during {}", CallPhaseName(phase)))
          .Fix("unset CUDNN_LIB_CONFIG (or set it to FULL), or install the missing sub-library")
          .Fix(kDoctorFix + std::string(" to see which sub-libraries are present"));
  }
}

void PatternNotSupported(int status, CallPhase phase, Translation& t) {
  t.code = ErrorCode::kUnsupported;
  std::string what;
  switch (status) {
    case 3001: what = "this operation graph pattern"; break;
    case 3002: what = "this shape"; break;
    case 3003: what = "this data type combination"; break;
    case 3004: what = "this memory layout"; break;
    case 3010: what = "a kernel that fits this GPU's shared memory"; break;
    case 3011: what = "this padding"; break;
    case 3012: what = "a launchable kernel configuration"; break;
    case 3013: what = "the native CUDA graph API for this plan"; break;
    case 3014: what = "this dynamic shape"; break;
    default: what = "this operation";
  }
  switch (phase) {
    case CallPhase::kPlanChoice:
      // onnxruntime#26274: "No valid engine configs for ConvFwd_".
      t.Because(fmt::format("no engine in this cuDNN supports {} on this GPU", what),
                "the heuristics or plan finalisation returned NOT_SUPPORTED (cf. onnxruntime#26274, \"No valid engine "
                "configs\")")
          .Because("CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY, or a missing libcudnn_engines_precompiled, leaves only the "
                   "runtime-compiled engines, which cover fewer patterns",
                   "the precompiled-engines library holds most engines")
          .Because("vigil's filters (no TF32 for float32, --deterministic) rejected the engines that remain",
                   "the diagnosis of the plan lists what was rejected")
          .Fix(kCpuFallbackFix)
          .Fix("unset CUDNN_LIB_CONFIG, and make sure libcudnn_engines_precompiled.so.9 is installed (`vigil doctor`)")
          .Fix("allow TF32 (--tf32) or run in float16; a newer cuDNN may have an engine for it");
      break;
    case CallPhase::kDescriptorSetup:
      // onnxruntime#15715: NOT_SUPPORTED in cudnnSetTensorNdDescriptor at batch 32 only.
      t.Because(fmt::format("cuDNN refuses a descriptor for {}: its limits on dimensions, strides or sizes", what),
                "such limits hit at some sizes only (onnxruntime#15715: NOT_SUPPORTED at batch 32)")
          .Fix("try another batch size or input size")
          .Fix(kCpuFallbackFix);
      break;
    case CallPhase::kExecution:
      t.Because(fmt::format("the chosen engine cannot run with {} on this GPU", what),
                "the plan finalised but its kernel was refused at launch")
          .Fix(kCpuFallbackFix)
          .Fix(kReportFix);
      break;
    default:
      t.Because(fmt::format("cuDNN does not support {} during {}", what, CallPhaseName(phase)),
                "the status is a NOT_SUPPORTED sub-code")
          .Fix(kDoctorFix)
          .Fix(kCpuFallbackFix);
  }
}

void OutOfMemory(int status, CallPhase phase, Translation& t) {
  t.code = ErrorCode::kOutOfMemory;
  if (status == 4003) {
    t.Because("host (CPU) memory is exhausted", "cuDNN could not allocate host memory")
        .Fix("free host memory, or raise the process's memory limit (ulimit -v, container limits)");
    return;
  }
  t.Because("GPU memory is exhausted: the run, cuDNN's own buffers and other processes need more than the GPU has",
            fmt::format("cuDNN could not allocate device memory during {}", CallPhaseName(phase)));
  if (phase == CallPhase::kHandleCreation) {
    t.Because("another framework in this process or another process preallocated the GPU's memory",
              "tensorflow#24496: handle creation fails when the framework took all memory first");
  } else {
    t.Because("--gpu-mem-limit (or the free memory at plan time) left no room for what cuDNN allocates itself",
              "vigil's memory check counts the arena and outputs, not the libraries' internal buffers");
  }
  t.Fix("lower the batch size or the input size")
      .Fix("set --gpu-mem-limit below the free memory so that vigil refuses an oversized run up front")
      .Fix("free the GPU from other processes (nvidia-smi)");
}

void Internal(int status, CallPhase phase, Translation& t) {
  if (status == 4001) {
    t.code = ErrorCode::kEnvironment;
    t.Because("NVRTC failed to compile a runtime-compiled engine: libnvrtc missing, of another CUDA version, or "
              "unable to target this GPU",
              "runtime-compiled engines are built with NVRTC on first use")
        .Fix(kDoctorFix)
        .Fix("install NVRTC of the CUDA runtime's version; unset CUDNN_LIB_CONFIG to use precompiled engines");
    return;
  }
  if (Early(phase)) {
    t.code = ErrorCode::kEnvironment;
    t.Because("GPU memory is exhausted by another process or framework", "tensorflow#24496: 'Could not create cudnn "
                                                                         "handle: CUDNN_STATUS_INTERNAL_ERROR'")
        .Because("cuDNN does not fit the driver or the CUDA runtime", "version mismatches surface as internal errors")
        .Fix(kDoctorFix)
        .Fix("free the GPU from other processes (nvidia-smi)");
    return;
  }
  if (phase == CallPhase::kExecution) {
    t.Because("a device buffer smaller than the dimensions its descriptor declares",
              "onnxruntime#11592: INTERNAL_ERROR from an input buffer smaller than the dims passed")
        .Because("an earlier kernel fault surfacing here", "CUDA errors are asynchronous")
        .Fix(kSyncFix)
        .Fix(kReportFix);
    return;
  }
  t.Because(fmt::format("a cuDNN defect for this pattern, or an allocation cuDNN could not make during {}",
                        CallPhaseName(phase)),
            "cuDNN reports some allocation failures as internal errors")
      .Fix("try another cuDNN release")
      .Fix(kCpuFallbackFix);
}

void ExecutionFailed(int status, CallPhase phase, Translation& t) {
  if (Early(phase)) {
    t.code = ErrorCode::kEnvironment;
    t.Because("the CUDA driver or runtime cannot start on this GPU", "cuDNN's own CUDA call failed during handle creation")
        .Fix(kDoctorFix);
    return;
  }
  t.code = ErrorCode::kDeviceFault;
  if (status == 5002) {
    t.Because("cuBLASLt, which cuDNN uses for matrix products, failed or is a mismatched copy",
              "cuDNN 9 depends on libcublasLt of its CUDA major version");
  } else if (status == 5001) {
    t.Because("the driver failed under cuDNN: the GPU fell off the bus, was reset, or hit an Xid error",
              "a driver API call inside cuDNN failed");
  }
  t.Because("an earlier kernel faulted, and cuDNN is where the asynchronous error surfaced",
            "CUDA reports kernel faults at the next synchronising call")
      .Because("a buffer smaller than its tensor descriptor, read or written out of bounds",
               "the kernel's accesses follow the descriptor, not the allocation")
      .Because("faulty GPU hardware", "if it recurs at random places")
      .Fix(kSyncFix)
      .Fix(kRestartFix)
      .Fix(kHardwareCheck);
}

}  // namespace

std::span<const GpuStatusInfo> CudnnStatuses() { return kCudnnStatuses; }

Translation TranslateCudnn(int status, CallPhase phase) {
  Translation t;
  switch (status) {
    case 1001: NotInitialized(phase, t); return t;
    case 1002:
      t.code = ErrorCode::kEnvironment;
      t.Because("cuDNN sub-libraries from different releases are loaded together",
                "two cuDNN copies on the search path (a pip wheel and a system package) mix")
          .Fix(kDoctorFix + std::string(": it lists every copy and the version of each sub-library"))
          .Fix("remove the stray copy or fix LD_LIBRARY_PATH so that one cuDNN release is found");
      return t;
    case 1003:
      t.code = ErrorCode::kEnvironment;
      t.Because("a serialised plan or tuning cache comes from another cuDNN version", "cuDNN refuses to deserialise it")
          .Fix("delete the tuning cache; it is rebuilt for this cuDNN");
      return t;
    case 1004:
      t.Because("vigil uses a cuDNN feature this release deprecates or removed",
                "vigil builds with -DCUDNN_WARN_DEPRECATED, so this is a runtime-only deprecation")
          .Fix(kReportFix)
          .Fix("use the cuDNN release vigil was built against (`vigil doctor`)");
      return t;
    case 1005:
      t.code = ErrorCode::kEnvironment;
      t.Because("the cuDNN installation failed a licence check", "CUDNN_STATUS_LICENSE_ERROR")
          .Fix("reinstall cuDNN from NVIDIA's packages");
      return t;
    case 1006:
      t.Because("a runtime-error query came before the kernels finished", "vigil queries after synchronising")
          .Fix(kReportFix);
      return t;
    case 1007:
      t.code = ErrorCode::kInvalidInput;
      t.Because("values overflowed the data type: inputs far outside the range the model expects, or float16 "
                "overflow (max 65504)",
                fmt::format("cuDNN detected an overflow during {}", CallPhaseName(phase)))
          .Fix("check the input's scale and preprocessing; run the model in float32");
      return t;
    case 1008: SublibraryLoading(phase, t); return t;
    default: break;
  }
  switch (status / 1000) {
    case 2: BadParam(status, phase, t); break;
    case 3:
      if (phase == CallPhase::kHandleCreation && status == 3000) {
        t.code = ErrorCode::kEnvironment;
        t.Because("this cuDNN does not support the GPU or driver", "cudnnCreate returned NOT_SUPPORTED")
            .Fix(kDoctorFix);
      } else if (status >= 3005 && status <= 3009) {
        EnvironmentNotSupported(status, phase, t);
      } else {
        PatternNotSupported(status, phase, t);
      }
      break;
    case 4:
      if (status == 4003 || status == 4004) {
        OutOfMemory(status, phase, t);
      } else {
        Internal(status, phase, t);
      }
      break;
    case 5: ExecutionFailed(status, phase, t); break;
    default:
      t.Because(fmt::format("cuDNN returned status {}, which is not in cuDNN 9's cudnnStatus_t as vigil knows it",
                            status),
                "a newer cuDNN than vigil's table, or a corrupted return value (mixed cuDNN copies)")
          .Fix("look the number up in the cudnn_graph.h of the installed cuDNN")
          .Fix(kDoctorFix);
  }
  return t;
}

}  // namespace vigil::doctor::gpu_errors
