// CUDA runtime errors seen in practice (driver_types.h, cudaError_t), and
// what each means in each phase.
#include <fmt/format.h>

#include "doctor/errors/cuda_errors_internal.h"

namespace vigil::doctor::gpu_errors {
namespace {

constexpr GpuStatusInfo kCudaStatuses[] = {
    {1, "cudaErrorInvalidValue", "an argument is out of range"},
    {2, "cudaErrorMemoryAllocation", "out of device memory"},
    {3, "cudaErrorInitializationError", "the CUDA driver and runtime could not be initialised"},
    {4, "cudaErrorCudartUnloading", "the CUDA runtime is shutting down"},
    {9, "cudaErrorInvalidConfiguration", "the kernel launch configuration is invalid"},
    {17, "cudaErrorInvalidDevicePointer", "a pointer is not a valid device pointer"},
    {21, "cudaErrorInvalidMemcpyDirection", "the copy direction does not match the pointers"},
    {34, "cudaErrorStubLibrary", "a stub libcuda was loaded instead of the real driver"},
    {35, "cudaErrorInsufficientDriver", "the NVIDIA driver is older than the CUDA runtime"},
    {36, "cudaErrorCallRequiresNewerDriver", "the call needs a newer NVIDIA driver"},
    {46, "cudaErrorDevicesUnavailable", "all devices are busy or unavailable"},
    {98, "cudaErrorInvalidDeviceFunction", "the kernel is not built for this device"},
    {100, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {101, "cudaErrorInvalidDevice", "the device ordinal is not valid"},
    {200, "cudaErrorInvalidKernelImage", "the kernel image is invalid"},
    {209, "cudaErrorNoKernelImageForDevice", "there is no kernel image for this GPU's architecture"},
    {214, "cudaErrorECCUncorrectable", "an uncorrectable ECC memory error was detected"},
    {218, "cudaErrorInvalidPtx", "PTX JIT compilation failed"},
    {221, "cudaErrorJitCompilerNotFound", "the PTX JIT compiler library is missing"},
    {222, "cudaErrorUnsupportedPtxVersion", "the PTX was built by a newer toolchain than the driver supports"},
    {400, "cudaErrorInvalidResourceHandle", "a stream, event or other handle is invalid"},
    {700, "cudaErrorIllegalAddress", "a kernel accessed an illegal memory address"},
    {701, "cudaErrorLaunchOutOfResources", "the launch needs more registers or resources than the GPU has"},
    {702, "cudaErrorLaunchTimeout", "a kernel ran past the watchdog timeout"},
    {709, "cudaErrorContextIsDestroyed", "the CUDA context was destroyed"},
    {710, "cudaErrorAssert", "a device-side assert failed"},
    {714, "cudaErrorHardwareStackError", "the kernel's hardware stack overflowed or was corrupted"},
    {715, "cudaErrorIllegalInstruction", "a kernel executed an illegal instruction"},
    {716, "cudaErrorMisalignedAddress", "a kernel accessed a misaligned address"},
    {717, "cudaErrorInvalidAddressSpace", "a kernel used an address in the wrong address space"},
    {718, "cudaErrorInvalidPc", "a kernel's program counter became invalid"},
    {719, "cudaErrorLaunchFailure", "a kernel failed (unspecified launch failure)"},
    {801, "cudaErrorNotSupported", "the operation is not supported on this device or platform"},
    {802, "cudaErrorSystemNotReady", "the system is not ready (fabric manager or driver services not running)"},
    {803, "cudaErrorSystemDriverMismatch", "the kernel-mode and user-mode driver versions differ"},
    {804, "cudaErrorCompatNotSupportedOnDevice", "the CUDA forward-compatibility package does not support this GPU"},
    {999, "cudaErrorUnknown", "an unknown CUDA error"},
};

// Errors after which the context is unusable for the rest of the process.
bool Sticky(int e) {
  switch (e) {
    case 214: case 700: case 702: case 710: case 714: case 715: case 716: case 717: case 718: case 719: return true;
    default: return false;
  }
}

void DeviceFault(int e, CallPhase phase, Translation& t) {
  t.code = ErrorCode::kDeviceFault;
  if (e == 214) {
    t.Because("the GPU's memory has an uncorrectable error", "ECC reported it").Fix(kHardwareCheck).Fix(kRestartFix);
    return;
  }
  if (e == 702) {
    t.Because("a kernel ran longer than the display watchdog allows", "the GPU also drives a display")
        .Fix("use a GPU without a display attached, or a smaller batch")
        .Fix(kRestartFix);
    return;
  }
  std::string where = phase == CallPhase::kExecution
                          ? "an earlier kernel on this stream (the error shows at the next synchronising call)"
                          : fmt::format("a kernel that ran before this {} call", CallPhaseName(phase));
  std::string access = e == 716 ? "read or wrote through a misaligned pointer (a view at an odd byte offset)"
                                : "read or wrote outside its buffers";
  t.Because(fmt::format("{} {}: a vigil kernel bug, or a buffer smaller than its shape says", where, access),
            "onnxruntime#26312: 'CUDA failure 700: an illegal memory access' came from out-of-bounds accesses")
      .Because("two threads using one handle or stream at once", "concurrent misuse shows as the same fault")
      .Because("faulty GPU hardware", "if it recurs at random places or models")
      .Fix(kRestartFix)
      .Fix(kSyncFix)
      .Fix(kHardwareCheck);
}

void NoGpu(int e, Translation& t) {
  t.code = ErrorCode::kEnvironment;
  switch (e) {
    case 100:
      t.Because("no GPU is visible to this process", "CUDA_VISIBLE_DEVICES may be empty or name no existing GPU")
          .Because("the NVIDIA kernel module is not loaded, or the container was started without the GPU",
                   "nvidia-smi fails too in that case");
      break;
    case 101:
      t.Because("the --device index is not a visible GPU", "CUDA_VISIBLE_DEVICES renumbers the GPUs from 0")
          .Fix("pick a device below the number `vigil doctor` lists");
      break;
    case 46:
      t.Because("the GPU is in exclusive-process compute mode and another process holds it",
                "`nvidia-smi -q -d COMPUTE` shows the mode")
          .Fix("stop the other process, or set the compute mode to Default");
      break;
    case 803:
      t.Because("the user-mode driver (libcuda) and the kernel module are from different driver releases",
                "usually after a driver update without a reboot, or a container with a mismatched libcuda")
          .Fix("reboot after a driver update, or use the libcuda that matches the kernel module");
      break;
    case 804:
      t.Because("the CUDA forward-compatibility package (cuda-compat) does not support this GPU",
                "forward compatibility covers data-centre GPUs only")
          .Fix("remove cuda-compat from the library path and update the driver instead");
      break;
    case 34:
      t.Because("a stub libcuda.so (from the toolkit's stubs folder) is on the library path",
                "stubs exist for linking only")
          .Fix("remove .../lib64/stubs from LD_LIBRARY_PATH");
      break;
    case 802:
      t.Because("NVIDIA driver services are not ready (e.g. nvidia-fabricmanager on NVSwitch systems)",
                "CUDA refuses to start until they are")
          .Fix("start nvidia-fabricmanager / check `systemctl status nvidia-*`");
      break;
    default:  // 3, 35, 36
      t.Because("the NVIDIA driver is older than the CUDA runtime vigil was built with, or not installed",
                "nvidia-smi shows the highest CUDA version the driver supports; nvcc shows the toolkit, which may "
                "be newer")
          .Fix("update the NVIDIA driver");
  }
  t.Fix(kDoctorFix);
}

void NoKernelImage(int e, Translation& t) {
  t.code = ErrorCode::kEnvironment;
  if (e == 221) {
    t.Because("the driver's PTX JIT compiler (libnvidia-ptxjitcompiler) is missing",
              "vigil's module carries PTX for GPUs newer than its machine code")
        .Fix("install the complete NVIDIA driver");
  } else if (e == 222 || e == 218) {
    t.Because("vigil's CUDA module was built by a newer toolkit than the driver can JIT-compile",
              "the PTX version is newer than the driver's")
        .Fix("update the NVIDIA driver, or build vigil with a toolkit the driver supports");
  } else {
    // onnxruntime#26221: cudaErrorNoKernelImageForDevice on an RTX 5090.
    t.Because("vigil's CUDA module was not built for this GPU's architecture (compute capability)",
              "the module holds sm_80, sm_86 and sm_90 code and compute_90 PTX by default; a GPU outside that needs "
              "its architecture in CMAKE_CUDA_ARCHITECTURES (onnxruntime#26221: sm_120 missing)")
        .Fix("rebuild with -DCMAKE_CUDA_ARCHITECTURES including this GPU's architecture (`vigil doctor` shows it)");
  }
  t.Fix(kDoctorFix);
}

void OutOfMemory(CallPhase phase, Translation& t) {
  t.code = ErrorCode::kOutOfMemory;
  t.Because(fmt::format("GPU memory is exhausted during {}", CallPhaseName(phase)),
            phase == CallPhase::kHandleCreation ? "creating the context, stream or handles needs device memory"
                                                : "cudaMalloc failed")
      .Because("other processes hold the GPU's memory", "see nvidia-smi")
      .Fix("lower the batch size or the input size")
      .Fix("set --gpu-mem-limit below the free memory so that vigil refuses an oversized run up front")
      .Fix("free the GPU from other processes (nvidia-smi)");
}

void InvalidArgument(int e, CallPhase phase, Translation& t) {
  // CUDA 13 answers a launch with too many threads per block with
  // cudaErrorInvalidValue, not InvalidConfiguration (seen on an H100).
  if (e == 9 || e == 701 || (e == 1 && phase == CallPhase::kExecution)) {
    t.Because(e != 701 ? "a vigil kernel was launched with a grid or block size the GPU does not allow"
                       : "a vigil kernel needs more registers or shared memory per block than this GPU has",
              "typically a zero-sized or enormous grid from a shape vigil did not expect")
        .Fix(kReportFix)
        .Fix(kCpuFallbackFix);
    if (e == 1) t.Because("an invalid argument to an execution call", "cudaErrorInvalidValue during execution");
    return;
  }
  if (phase == CallPhase::kCopy && (e == 1 || e == 17 || e == 21)) {
    t.Because("a host<->device copy with a wrong pointer or size: a host pointer where a device pointer belongs, "
              "or a size beyond the buffer",
              "seed 003: an access violation in a copy came from an element count computed wrongly");
    t.Fix("check the input's pointer kind and byte size (vigil check validates them)").Fix(kReportFix);
    return;
  }
  t.Because(fmt::format("vigil passed an invalid argument or handle during {}", CallPhaseName(phase)),
            "the CUDA runtime rejected the call before running anything")
      .Fix(kReportFix);
}

}  // namespace

std::span<const GpuStatusInfo> CudaStatuses() { return kCudaStatuses; }

Translation TranslateCuda(int e, CallPhase phase) {
  Translation t;
  if (Sticky(e)) {
    DeviceFault(e, phase, t);
    return t;
  }
  switch (e) {
    case 2: OutOfMemory(phase, t); break;
    case 3: case 34: case 35: case 36: case 46: case 100: case 101: case 802: case 803: case 804: NoGpu(e, t); break;
    case 98: case 200: case 209: case 218: case 221: case 222: NoKernelImage(e, t); break;
    case 1: case 9: case 17: case 21: case 400: case 701: InvalidArgument(e, phase, t); break;
    case 4: case 709:
      t.Because("a CUDA call after the process began to exit, or after the context was destroyed",
                "CUDA must not be called from static destructors")
          .Fix(kReportFix);
      break;
    case 801:
      t.code = ErrorCode::kUnsupported;
      t.Because(fmt::format("this GPU or platform does not support an operation used during {}", CallPhaseName(phase)),
                "cudaErrorNotSupported")
          .Fix(kDoctorFix);
      break;
    case 999:
      t.code = ErrorCode::kDeviceFault;
      t.Because("the driver reported an unspecified error: often a GPU that fell off the bus or a driver fault",
                "check dmesg for Xid errors")
          .Fix(kHardwareCheck)
          .Fix(kRestartFix);
      break;
    default:
      t.Because(fmt::format("the CUDA runtime returned error {}, which vigil's table does not explain", e),
                "see cudaGetErrorString in the facts")
          .Fix(kDoctorFix);
  }
  return t;
}

}  // namespace vigil::doctor::gpu_errors
