// `vigil doctor` as a library call: probe, rules, live check, and optionally
// a binary's dependencies, gathered into one DoctorReport.
#pragma once

#include <optional>
#include <string>

#include "doctor/live/live_check.h"
#include "doctor/probe/probe.h"
#include "doctor/report.h"

namespace vigil::doctor {

struct DoctorOptions {
  ProbeOptions probe;
  bool live_check = true;
  LiveCheckOptions live;
  std::optional<std::string> binary;  // --binary FILE
};

DoctorReport RunDoctor(const DoctorOptions& options);

// Adds the findings of `vigil doctor --binary FILE` (library resolution of
// FILE, binary_deps.h) to `report`.
void AddBinaryReport(const std::string& path, const SearchEnvironment& env, DoctorReport& report);

}  // namespace vigil::doctor
