// The worker side of the crash guard (crash_guard.h).
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>

#include "isolation/crash_guard.h"
#include "isolation/isolation_wire.h"
#include "ops/attributes.h"

namespace vigil::doctor {
namespace {

Status WriteAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) return EnvironmentError("cannot write the isolated run's answer to shared memory");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Result<std::vector<runtime::NamedTensor>> ReadInputs(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return EnvironmentError("cannot stat the isolated run's input memory");
  if (st.st_size == 0) return DecodeTensors({});
  void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return EnvironmentError("cannot map the isolated run's input memory");
  auto decoded = DecodeTensors({static_cast<const uint8_t*>(p), static_cast<size_t>(st.st_size)});
  munmap(p, static_cast<size_t>(st.st_size));
  return decoded;
}

// The backends that run a node, comma-separated, as a uint8 tensor.
Result<std::vector<runtime::NamedTensor>> BackendsAnswer(const runtime::Session& session) {
  std::string list;
  for (const runtime::NodePlacement& p : session.placement()) {
    const std::string name(p.backend);
    if (("," + list + ",").find("," + name + ",") == std::string::npos) list += (list.empty() ? "" : ",") + name;
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor t,
                         runtime::Tensor::Allocate(ir::DataType::kUint8, {static_cast<int64_t>(list.size())}));
  for (size_t i = 0; i < list.size(); ++i) static_cast<char*>(t.raw_data())[i] = list[i];
  std::vector<runtime::NamedTensor> out;
  out.push_back({"backends", std::move(t)});
  return out;
}

Result<std::vector<runtime::NamedTensor>> LoadAndRun(IsolationControl& control, int inputs_fd,
                                                     const SessionLoader& load, ServeMode mode) {
  control.stage = static_cast<int32_t>(IsolationStage::kReadingInputs);
  VIGIL_ASSIGN_OR_RETURN(std::vector<runtime::NamedTensor> inputs, ReadInputs(inputs_fd));
  control.stage = static_cast<int32_t>(IsolationStage::kLoadingSession);
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Session> session, load());
  if (mode == ServeMode::kLoadOnly) return BackendsAnswer(*session);
  std::vector<runtime::InputBinding> bindings;
  for (const runtime::NamedTensor& t : inputs) {
    bindings.push_back({t.name, t.tensor.dtype(), t.tensor.shape(), t.tensor.raw_data(), t.tensor.byte_size(),
                        t.name.empty() ? "input" : t.name});
  }
  control.stage = static_cast<int32_t>(IsolationStage::kRunning);
  // The text is written with node_index = -2 so that a parent reading it
  // after a crash in between knows it may be torn.
  // The call after the last node (node null) is ignored: a crash while the
  // outputs are read back is reported at the last node, as it was.
  runtime::NodeObserver observer = [&control](const runtime::NodeStart& n) {
    if (!n.node) return;
    control.node_index = -2;
    CopyText(control.node_label, ops::NodeLabel(*n.node));
    CopyText(control.node_backend, n.backend);
    CopyText(control.node_inputs, *n.input_shapes);
    control.nodes_started = control.nodes_started + 1;
    control.node_index = static_cast<int64_t>(n.node_index);
  };
  return session->Run(std::move(bindings), observer);
}

}  // namespace

std::optional<IsolatedChildFds> ParseIsolatedChildFds(std::string_view text) {
  int v[3] = {-1, -1, -1};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int i = 0; i < 3; ++i) {
    auto [next, ec] = std::from_chars(p, end, v[i]);
    if (ec != std::errc() || v[i] < 0) return std::nullopt;
    p = next;
    if (i < 2) {
      if (p == end || *p != ',') return std::nullopt;
      ++p;
    }
  }
  if (p != end) return std::nullopt;
  return IsolatedChildFds{v[0], v[1], v[2]};
}

int ServeIsolatedRun(const IsolatedChildFds& fds, const SessionLoader& load, ServeMode mode) {
  void* p = mmap(nullptr, sizeof(IsolationControl), PROT_READ | PROT_WRITE, MAP_SHARED, fds.control, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "vigil: the isolated run's control memory (fd %d) cannot be mapped\n", fds.control);
    return 3;
  }
  auto* control = static_cast<IsolationControl*>(p);
  if (control->magic != kIsolationMagic || control->version != kIsolationVersion) {
    std::fprintf(stderr, "vigil: the isolated run's control memory has the wrong format\n");
    return 3;
  }
  InstallCrashHandler(&control->crash, -1);
  Result<std::vector<runtime::NamedTensor>> result = LoadAndRun(*control, fds.inputs, load, mode);
  control->stage = static_cast<int32_t>(IsolationStage::kWritingOutputs);
  Status written = WriteAll(fds.answer, EncodeAnswer(result));
  control->stage = static_cast<int32_t>(IsolationStage::kDone);
  if (!written.ok()) {
    std::fprintf(stderr, "vigil: %s\n", written.summary().c_str());
    return 3;
  }
  return result.ok() ? 0 : 1;
}

}  // namespace vigil::doctor
