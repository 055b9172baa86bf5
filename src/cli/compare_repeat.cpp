#include "cli/compare_repeat.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "cli/tooling.h"
#include "cli/per_node_compare.h"

namespace vigil::cli {
namespace {

// How one output of a repeat differs, bit for bit, from the first repeat's.
struct BitwiseDiff {
  bool same_layout = true;  // dtype and shape equal
  uint64_t differing = 0;   // elements whose bytes differ
  double max_difference = 0;
};

BitwiseDiff CompareBits(const runtime::Tensor& first, const runtime::Tensor& other) {
  BitwiseDiff d;
  if (first.dtype() != other.dtype() || first.shape() != other.shape()) {
    d.same_layout = false;
    d.differing = std::max(first.element_count(), other.element_count());
    return d;
  }
  const uint64_t n = first.element_count();
  const size_t width = n ? first.byte_size() / n : 0;
  const auto* a = static_cast<const uint8_t*>(first.raw_data());
  const auto* b = static_cast<const uint8_t*>(other.raw_data());
  for (uint64_t i = 0; i < n && width; ++i) {
    if (std::memcmp(a + i * width, b + i * width, width) == 0) continue;
    ++d.differing;
    double diff = std::fabs(runtime::ElementAsDouble(first, i) - runtime::ElementAsDouble(other, i));
    // NaN against a number (or a different NaN) has no size: count it as infinite.
    d.max_difference = std::max(d.max_difference, std::isnan(diff) ? INFINITY : diff);
  }
  return d;
}

// Per output: which repeats differ from repeat 1, and by how much at most.
struct OutputDrift {
  std::string name;
  std::vector<int> differing_repeats;
  uint64_t max_differing = 0;
  double max_difference = 0;
  bool layout_changed = false;
};

// Per repeat: the comparison of each output with the reference.
struct RepeatResult {
  std::vector<ValueComparison> outputs;
  std::vector<std::string> beyond_tolerance;
};

std::string JoinInts(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += fmt::format("{}{}", s.empty() ? "" : ", ", x);
  return s;
}

std::string JoinNames(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += fmt::format("{}'{}'", s.empty() ? "" : ", ", x);
  return s;
}

struct Findings {
  std::vector<OutputDrift> drift;
  std::vector<RepeatResult> repeats;
  std::vector<int> nondeterministic_repeats;  // differ from repeat 1 in some output
  std::vector<int> disagreeing_repeats;       // beyond tolerance in some output
};

// Why outputs change between runs on one machine, and what to do, by backend.
struct CauseAndFix {
  std::string cause, fix;
};
CauseAndFix NondeterminismCause(const RepeatRequest& r) {
  const std::string& got = r.backend_names[0];
  if (got == "cpu") {
    return {"nondeterministic, and vigil's cpu backend is meant to be deterministic: a kernel races or reads memory "
            "it never wrote, a bug in vigil",
            "report it with the model (`vigil reduce` shrinks it to the node)"};
  }
  if (!r.deterministic) {
    return {fmt::format("nondeterministic: the {} backend chose algorithms that accumulate in a different order on "
                        "every run (atomics in cuDNN, cuBLASLt or vigil's kernels)",
                        got),
            "rerun with --deterministic"};
  }
  return {"nondeterministic although --deterministic allowed only deterministic algorithms: a race in a kernel or a "
          "faulty GPU",
          "repeat on another GPU of the same model; if it follows the GPU, check `nvidia-smi -q -d "
          "ECC,ROW_REMAPPER`, else report it (`vigil reduce` finds the node)"};
}

std::string Verdict(const Findings& f, const RepeatRequest& r) {
  const std::string& ref = r.backend_names[1];
  std::vector<std::string> parts;
  if (!f.nondeterministic_repeats.empty()) {
    std::string outs;
    for (const OutputDrift& d : f.drift) {
      if (d.differing_repeats.empty()) continue;
      outs += fmt::format("{}'{}' ({} element(s), max difference {:.3g})", outs.empty() ? "" : ", ", d.name,
                          d.max_differing, d.max_difference);
    }
    const CauseAndFix why = NondeterminismCause(r);
    parts.push_back(fmt::format("{} — fix: {}; repeats {} are not bitwise identical to repeat 1 in {}", why.cause,
                                why.fix, JoinInts(f.nondeterministic_repeats), outs));
  }
  if (!f.disagreeing_repeats.empty()) {
    const bool every = static_cast<int>(f.disagreeing_repeats.size()) == r.repeat;
    if (every && f.nondeterministic_repeats.empty()) {
      parts.push_back(fmt::format("disagrees with the {} reference beyond tolerance in every repeat, the same way: "
                                  "a numerical difference of the kernels (or too tight a tolerance), not a sign of "
                                  "faulty hardware; vigil compare --per-node finds the first node",
                                  ref));
    } else {
      parts.push_back(fmt::format("disagrees with the {} reference beyond tolerance in repeat{} {}{}", ref,
                                  f.disagreeing_repeats.size() == 1 ? "" : "s", JoinInts(f.disagreeing_repeats),
                                  every ? ", by amounts that change between repeats"
                                        : " — a faulty GPU shows itself as disagreement that changes between "
                                          "repeats"));
    }
  }
  if (parts.empty()) {
    return fmt::format("deterministic and within tolerance: {} repeat(s) bitwise identical, each within tolerance "
                       "of the {} reference",
                       r.repeat, ref);
  }
  std::string v;
  for (const std::string& p : parts) v += (v.empty() ? "" : "; ") + p;
  return v;
}

nlohmann::json FindingsJson(const Findings& f, const RepeatRequest& r, const std::string& verdict) {
  nlohmann::json j = r.header_json;
  j["repeat"] = r.repeat;
  j["deterministic"] = f.nondeterministic_repeats.empty();
  j["within_tolerance"] = f.disagreeing_repeats.empty();
  j["nondeterministic_repeats"] = f.nondeterministic_repeats;
  j["disagreeing_repeats"] = f.disagreeing_repeats;
  j["pass"] = f.nondeterministic_repeats.empty() && f.disagreeing_repeats.empty();
  j["verdict"] = verdict;
  j["outputs"] = nlohmann::json::array();
  for (const OutputDrift& d : f.drift) {
    j["outputs"].push_back({{"name", d.name},
                            {"deterministic", d.differing_repeats.empty()},
                            {"differing_repeats", d.differing_repeats},
                            {"max_differing_elements", d.max_differing},
                            {"max_difference", std::isinf(d.max_difference) ? nlohmann::json("inf")
                                                                            : nlohmann::json(d.max_difference)},
                            {"shape_or_dtype_changed", d.layout_changed}});
  }
  j["repeats"] = nlohmann::json::array();
  for (size_t i = 0; i < f.repeats.size(); ++i) {
    nlohmann::json outs = nlohmann::json::array();
    for (const ValueComparison& v : f.repeats[i].outputs) outs.push_back(ValueJson(v));
    j["repeats"].push_back({{"repeat", i + 1},
                            {"within_tolerance", f.repeats[i].beyond_tolerance.empty()},
                            {"diverging", f.repeats[i].beyond_tolerance},
                            {"outputs", outs}});
  }
  return j;
}

// The verdict comes first: a failure's first line names the cause and the fix.
std::string FindingsText(const Findings& f, const RepeatRequest& r, const std::string& verdict) {
  std::string text = (f.nondeterministic_repeats.empty() && f.disagreeing_repeats.empty() ? "PASS: " : "FAIL: ") +
                     verdict + "\n";
  text += r.header_text;
  text += fmt::format("repeats: {} runs of {} on the same inputs, against one run of {}\n", r.repeat,
                      r.backend_names[0], r.backend_names[1]);
  text += "determinism (bitwise, against repeat 1):\n";
  for (const OutputDrift& d : f.drift) {
    if (d.differing_repeats.empty()) {
      text += fmt::format("  {:<20} identical in all {} repeats\n", d.name, r.repeat);
    } else {
      text += fmt::format("  {:<20} differs in repeats {}: up to {} element(s), max difference {:.3g}{}\n", d.name,
                          JoinInts(d.differing_repeats), d.max_differing, d.max_difference,
                          d.layout_changed ? " (shape or dtype changed)" : "");
    }
  }
  text += fmt::format("agreement with {} (|got-ref| <= {:g} + {:g}*|ref|):\n", r.backend_names[1], r.atol, r.rtol);
  for (size_t i = 0; i < f.repeats.size(); ++i) {
    const RepeatResult& rr = f.repeats[i];
    double max_abs = 0;
    for (const ValueComparison& v : rr.outputs) max_abs = std::max(max_abs, v.cmp.max_abs_error);
    if (rr.beyond_tolerance.empty()) {
      text += fmt::format("  repeat {:<3} PASS  max abs error {:.3g}\n", i + 1, max_abs);
      continue;
    }
    text += fmt::format("  repeat {:<3} FAIL  {}\n", i + 1, JoinNames(rr.beyond_tolerance));
    for (const ValueComparison& v : rr.outputs) {
      if (!v.cmp.ok()) text += fmt::format("             {}: {}\n", v.name, Detail(v));
    }
  }
  return text;
}

}  // namespace

int CompareRepeated(const runtime::Session& got, const runtime::Session& ref,
                    const std::vector<runtime::InputBinding>& inputs, const RepeatRequest& r) {
  auto ref_outs = ref.Run(inputs);
  if (!ref_outs.ok()) return ReportFailure(OnSide(ref_outs.status(), r.backend_names[1], "reference"), r.json);
  Findings f;
  for (const runtime::NamedTensor& o : *ref_outs) f.drift.push_back({o.name, {}, 0, 0, false});
  std::vector<runtime::NamedTensor> first;
  for (int rep = 1; rep <= r.repeat; ++rep) {
    std::fprintf(stderr, "compare: repeat %d/%d on %s\n", rep, r.repeat, r.backend_names[0].c_str());
    auto outs = got.Run(inputs);
    if (!outs.ok()) {
      Status s = OnSide(outs.status(), r.backend_names[0], "got");
      return ReportFailure(s.WithFact("repeat", fmt::format("{} of {}", rep, r.repeat)), r.json);
    }
    if (outs->size() != ref_outs->size()) {
      return ReportFailure(InternalError("the two sessions returned {} and {} outputs", outs->size(),
                                         ref_outs->size()),
                           r.json);
    }
    RepeatResult rr;
    bool differs = false;
    for (size_t i = 0; i < outs->size(); ++i) {
      rr.outputs.push_back(CompareValue((*ref_outs)[i].name, (*outs)[i].tensor, (*ref_outs)[i].tensor, r.rtol, r.atol));
      if (!rr.outputs.back().cmp.ok()) rr.beyond_tolerance.push_back((*ref_outs)[i].name);
      if (rep == 1) continue;
      BitwiseDiff d = CompareBits(first[i].tensor, (*outs)[i].tensor);
      if (d.differing == 0) continue;
      differs = true;
      OutputDrift& drift = f.drift[i];
      drift.differing_repeats.push_back(rep);
      drift.max_differing = std::max(drift.max_differing, d.differing);
      drift.max_difference = std::max(drift.max_difference, d.max_difference);
      drift.layout_changed |= !d.same_layout;
    }
    if (differs) f.nondeterministic_repeats.push_back(rep);
    if (!rr.beyond_tolerance.empty()) f.disagreeing_repeats.push_back(rep);
    f.repeats.push_back(std::move(rr));
    if (rep == 1) first = std::move(outs).value();
  }
  const std::string verdict = Verdict(f, r);
  const bool pass = f.nondeterministic_repeats.empty() && f.disagreeing_repeats.empty();
  if (r.json) {
    const auto json = FindingsJson(f, r, verdict);
    std::printf("%s\n", json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::string text = FindingsText(f, r, verdict);
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  return pass ? kExitOk : kExitDiagnosed;
}

}  // namespace vigil::cli
