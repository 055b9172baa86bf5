// Small helpers shared by the rules_*.cpp files (not a public header).
#pragma once

#include <string>
#include <vector>

#include "doctor/probe/snapshot.h"
#include "doctor/rules/finding.h"

namespace vigil::doctor {

inline Finding MakeFinding(std::string id, Severity severity, std::string summary, std::vector<Fact> evidence,
                           std::string fix, std::string component = {}) {
  return Finding{std::move(id), severity, std::move(summary), std::move(evidence), std::move(fix),
                 std::move(component)};
}

// The component if it was found, else nullptr.
inline const Component* Loaded(const StackSnapshot& s, const std::string& id) {
  const Component* c = s.Find(id);
  return (c != nullptr && c->found) ? c : nullptr;
}

// "9.14.0 at /usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0"
inline std::string Describe(const Component& c) {
  return c.version.ToString() + " at " + c.path;
}

// Compute capability as major*10+minor, and its text.
inline int CcOf(const Gpu& g) { return g.cc_major * 10 + g.cc_minor; }
inline std::string CcText(int cc) { return std::to_string(cc / 10) + "." + std::to_string(cc % 10); }

// The cuDNN component: "cudnn" (either major; the probe stores the one it loaded).
inline const Component* LoadedCudnn(const StackSnapshot& s) { return Loaded(s, kCudnn); }

// The folder of a path: "/a/b/libx.so" -> "/a/b".
inline std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// The CUDA major the rest of the stack uses, for choosing packages built for
// it (pip's nvidia-*-cu12 / -cu13, apt's *-cuda-13): the CUDA runtime's, else
// the highest the driver supports; 0 when neither is known.
inline int StackCudaMajor(const StackSnapshot& s) {
  const Component* cudart = Loaded(s, kCudart);
  if (cudart != nullptr && cudart->version.known()) return cudart->version.major;
  if (s.driver_cuda_version > 0) return DecodeCudaVersion(s.driver_cuda_version).major;
  return 0;
}

// A pip package of NVIDIA's built for a CUDA major: "nvidia-cudnn-cu13";
// both names when the major is unknown (FACTS.md: cuDNN 9 wheels are
// nvidia-cudnn-cu12 and nvidia-cudnn-cu13).
inline std::string PipPackage(const std::string& stem, int cuda_major) {
  if (cuda_major > 0) return stem + "-cu" + std::to_string(cuda_major);
  return stem + "-cu12 or " + stem + "-cu13 (by your CUDA major)";
}

// Rules about other cuDNN copies (rules_copies.cpp), listed in the cuDNN table.
std::vector<Finding> CudnnShadowedByLdLibraryPath(const StackSnapshot& s);
std::vector<Finding> MultipleCudnnVersions(const StackSnapshot& s);
// A newer copy of the loaded cuDNN's SONAME that an LD_LIBRARY_PATH folder
// hides: the loaded cuDNN comes from LD_LIBRARY_PATH and this one from a
// folder that is not first there. Prefers a copy built for the runtime's CUDA
// major, then the newest. nullptr when none.
const LibraryCopy* ShadowedNewerCudnn(const StackSnapshot& s);

}  // namespace vigil::doctor
