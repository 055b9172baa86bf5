// Small helpers shared by the rules_*.cpp files (not a public header).
#pragma once

#include <string>
#include <vector>

#include "doctor/probe/snapshot.h"
#include "doctor/rules/finding.h"

namespace vigil::doctor {

inline Finding MakeFinding(std::string id, Severity severity, std::string summary, std::vector<Fact> evidence,
                           std::string fix) {
  return Finding{std::move(id), severity, std::move(summary), std::move(evidence), std::move(fix)};
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

}  // namespace vigil::doctor
