// What the parent and the child of an isolated run share (crash_guard.h):
// the control block, a fixed-size struct in a shared mapping that the child
// updates as it goes (stage, the node it is running, its crash record), and
// the byte format of the tensors and the Status that cross in two memfds.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "doctor/crash/crash_handler.h"
#include "runtime/session.h"

namespace vigil::doctor {

inline constexpr uint32_t kIsolationMagic = 0x56494753;  // "VIGS"
inline constexpr uint32_t kIsolationVersion = 1;

// How far the child got.
enum class IsolationStage : int32_t {
  kStarted = 0,
  kReadingInputs = 1,
  kLoadingSession = 2,   // reading the model, loading backends, planning
  kRunning = 3,          // executing nodes
  kWritingOutputs = 4,
  kDone = 5,
};
const char* IsolationStageName(int32_t stage);

struct IsolationControl {
  uint32_t magic = kIsolationMagic;
  uint32_t version = kIsolationVersion;
  volatile int32_t stage = 0;
  // The node being run: -1 before the first; -2 while the text below is
  // being rewritten (then the text may be torn).
  volatile int64_t node_index = -1;
  volatile int64_t nodes_started = 0;
  char node_label[256] = {};      // "Conv 'conv1'"
  char node_backend[16] = {};     // "cuda"
  char node_inputs[2048] = {};    // "x: float32[1,3,224,224], W: ..."
  CrashRecord crash;
};

// Copies `text` into a fixed buffer, truncated and NUL-terminated.
template <size_t N>
void CopyText(char (&out)[N], std::string_view text) {
  size_t n = text.size() < N - 1 ? text.size() : N - 1;
  for (size_t i = 0; i < n; ++i) out[i] = text[i];
  out[n] = '\0';
}

// Tensors as bytes: "VGTN", count, then per tensor name, dtype, shape, data.
// Host tensors with fixed-size elements only.
Result<std::string> EncodeTensors(const std::vector<runtime::NamedTensor>& tensors);
// Decodes into owned tensors; every length is checked against the bytes.
Result<std::vector<runtime::NamedTensor>> DecodeTensors(std::span<const uint8_t> bytes);

// The child's answer: 'T' + EncodeTensors, or 'S' + the Diagnosis as JSON.
std::string EncodeAnswer(const Result<std::vector<runtime::NamedTensor>>& answer);
Result<std::vector<runtime::NamedTensor>> DecodeAnswer(std::span<const uint8_t> bytes);

}  // namespace vigil::doctor
