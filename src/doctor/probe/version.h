// Version numbers of the GPU stack, decoded from the integers the libraries'
// own APIs return and from file names. Each library family has its own
// encoding, and getting them wrong is a classic source of false alarms:
//   CUDA driver/runtime: MAJOR*1000 + MINOR*10        (13000 = 13.0, 12020 = 12.2)
//   cuDNN 8:            MAJOR*1000 + MINOR*100 + PATCH (8907 = 8.9.7)
//   cuDNN 9 and later:  MAJOR*10000 + MINOR*100 + PATCH (91400 = 9.14.0)
//   cuBLASLt:           MAJOR*10000 + MINOR*100 + PATCH (130100 = 13.1.0)
//   cudnnGetMaxDeviceVersion: SM_MAJOR*100 + SM_MINOR*10 (1210 = 12.1)
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

namespace vigil::doctor {

// A dotted version of which `parts` leading components are known: "9" is
// {9,0,0, parts=1}, "9.14.0" is {9,14,0, parts=3}. parts == 0: unknown.
struct Version {
  int major = 0;
  int minor = 0;
  int patch = 0;
  int parts = 0;

  bool known() const { return parts > 0; }
  // "9.14.0", "9", or "unknown".
  std::string ToString() const;
  // True when every component known in both is equal ("9" matches "9.14.0").
  bool CompatibleWith(const Version& other) const;
  // Orders by (major, minor, patch); only meaningful for known versions.
  auto operator<=>(const Version& other) const {
    return std::tie(major, minor, patch) <=> std::tie(other.major, other.minor, other.patch);
  }
  bool operator==(const Version& other) const = default;
};

Version MakeVersion(int major, int minor = 0, int patch = 0, int parts = 3);

// cudnnGetVersion(): picks the encoding from the value's size, because cuDNN 9
// changed it (seed 004 "Version Checking Against CUDNN_VERSION"): values below
// 10000 are cuDNN 8 or older, MAJOR*1000 + MINOR*100 + PATCH.
Version DecodeCudnnVersion(int64_t raw);
// cuDriverGetVersion, cudaRuntimeGetVersion, cudnnGetCudartVersion.
Version DecodeCudaVersion(int64_t raw);
// cublasLtGetVersion.
Version DecodeCublasLtVersion(int64_t raw);
// cudnnGetMaxDeviceVersion: a compute capability, e.g. 1210 -> 12.1.
Version DecodeDeviceVersion(int64_t raw);

// The version a shared library's file name carries after ".so.":
// "libcudnn.so.9.14.0" -> 9.14.0, "libcuda.so.580.65.06" -> 580.65.6 with
// parts=3, "libcudnn.so.9" -> 9 (parts=1), "libcudnn.so" -> unknown.
Version VersionFromFileName(std::string_view file_name);

// A driver release such as "580.65.06" (the patch keeps its leading zero in
// text, so it is compared numerically: 580.65.06 == 580.65.6).
std::optional<Version> ParseDottedVersion(std::string_view text);

}  // namespace vigil::doctor
