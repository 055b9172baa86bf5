// The doctor's rules: pure functions from a StackSnapshot to findings, each
// listed with its id in an explicit table (no self-registration). Rules never
// probe; everything they need is in the snapshot, so each is tested from a
// snapshot alone or from a probe of fake libraries.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "doctor/probe/snapshot.h"
#include "doctor/rules/finding.h"

namespace vigil::doctor {

using RuleCheck = std::vector<Finding> (*)(const StackSnapshot&);

struct Rule {
  std::string_view id;  // the finding id it produces (some produce a family: "cudnn.sublib_*")
  RuleCheck check;
};

// The tables, by topic.
std::span<const Rule> DriverRules();  // driver, runtime, GPUs, CUDA_VISIBLE_DEVICES
std::span<const Rule> CudnnRules();   // cuDNN versions, sub-libraries, copies, GPUs
std::span<const Rule> EnvRules();     // CUDNN_LIB_CONFIG, logging variables

// Runs every rule, errors first, then warnings, then infos (stable within).
std::vector<Finding> RunRules(const StackSnapshot& snapshot);

}  // namespace vigil::doctor
