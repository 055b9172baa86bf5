#include "batching.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "responses.h"

namespace vigil::triton {

void* StagingBuffer::Reserve(const vigil_session* session, size_t bytes, vigil_status** status) {
  if (value_ && capacity_ >= bytes) return vigil_value_mutable_data(value_);
  const size_t want = std::max(bytes, capacity_ + capacity_ / 2);
  const int64_t shape = static_cast<int64_t>(want);
  vigil_value* value = nullptr;
  if (vigil_status* st = vigil_session_allocate(session, VIGIL_DTYPE_UINT8, &shape, 1, VIGIL_MEMORY_HOST, &value)) {
    *status = st;
    return nullptr;
  }
  vigil_value_release(value_);
  value_ = value;
  capacity_ = want;
  plain_.clear();
  plain_.shrink_to_fit();
  return vigil_value_mutable_data(value_);
}

void* StagingBuffer::ReservePlain(size_t bytes) {
  if (plain_.size() < bytes) plain_.resize(std::max(bytes, plain_.size() + plain_.size() / 2));
  return plain_.data();
}

namespace {

// One input of one request, as one contiguous host buffer.
struct RequestInput {
  std::string name;
  vigil_dtype dtype = VIGIL_DTYPE_UNDEFINED;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t byte_size = 0;
  std::vector<unsigned char> gathered;  // when it came in several buffers or in GPU memory
};

// A request on its way through one execution.
struct Pending {
  TRITONBACKEND_Request* request = nullptr;
  std::string label;  // "request 'abc'", for messages
  std::vector<RequestInput> inputs;
  std::vector<std::string> outputs;  // the ones the client asked for
  int64_t batch = 1;
  MaybeProblem problem;
  bool answered = false;  // a response went out
  bool computed = false;  // its run succeeded
  uint64_t compute_start = 0, compute_end = 0, exec_end = 0;
};

using ValuePtr = std::unique_ptr<vigil_value, decltype(&vigil_value_release)>;

std::vector<std::string> Context(const InstanceState& inst, const std::string& label) {
  return {"triton model: " + inst.model->name + " version " + std::to_string(inst.model->version) + " (instance " +
              inst.name + ")",
          "request: " + label};
}

vigil_tensor HostTensor(const std::string& name, vigil_dtype dtype, const std::vector<int64_t>& shape,
                        const void* data, size_t byte_size) {
  return vigil_tensor{name.c_str(), dtype, shape.data(), shape.size(), const_cast<void*>(data), byte_size,
                      VIGIL_MEMORY_HOST, 0, nullptr};
}

// ---- Gathering ----------------------------------------------------------------------------

MaybeProblem CollectInput(InstanceState& inst, Pending& p, uint32_t index) {
  TRITONBACKEND_Input* input = nullptr;
  if (MaybeProblem e = Call(TRITONBACKEND_RequestInputByIndex(p.request, index, &input), "TRITONBACKEND_RequestInputByIndex")) {
    return e;
  }
  const char* name = nullptr;
  TRITONSERVER_DataType datatype = TRITONSERVER_TYPE_INVALID;
  const int64_t* shape = nullptr;
  uint32_t rank = 0, buffer_count = 0;
  uint64_t byte_size = 0;
  if (MaybeProblem e = Call(TRITONBACKEND_InputProperties(input, &name, &datatype, &shape, &rank, &byte_size,
                                                          &buffer_count),
                            "TRITONBACKEND_InputProperties")) {
    return e;
  }
  RequestInput in;
  in.name = name ? name : "";
  const TypeInfo* type = TypeByTriton(datatype);
  in.dtype = type ? type->vigil : VIGIL_DTYPE_UNDEFINED;
  if (rank) in.shape.assign(shape, shape + rank);
  in.byte_size = static_cast<size_t>(byte_size);

  auto buffer_at = [&](uint32_t b, const void** data, uint64_t* size, TRITONSERVER_MemoryType* memory,
                       int64_t* memory_id) {
    *memory = TRITONSERVER_MEMORY_CPU;
    *memory_id = 0;
    return Call(TRITONBACKEND_InputBuffer(input, b, data, size, memory, memory_id),
                "TRITONBACKEND_InputBuffer for input '" + in.name + "'");
  };
  if (buffer_count == 1) {
    const void* data = nullptr;
    uint64_t size = 0;
    TRITONSERVER_MemoryType memory;
    int64_t memory_id;
    if (MaybeProblem e = buffer_at(0, &data, &size, &memory, &memory_id)) return e;
    if (memory != TRITONSERVER_MEMORY_GPU && size == byte_size) {
      in.data = data;
      p.inputs.push_back(std::move(in));
      return std::nullopt;
    }
  }
  // Several buffers, or GPU memory: gathered into one host buffer.
  in.gathered.resize(in.byte_size);
  size_t offset = 0;
  for (uint32_t b = 0; b < buffer_count; ++b) {
    const void* data = nullptr;
    uint64_t size = 0;
    TRITONSERVER_MemoryType memory;
    int64_t memory_id;
    if (MaybeProblem e = buffer_at(b, &data, &size, &memory, &memory_id)) return e;
    if (size > in.byte_size - offset) {
      return Problem{TRITONSERVER_ERROR_INVALID_ARG,
                     "input '" + in.name + "': its " + std::to_string(buffer_count) + " buffers hold more than its " +
                         std::to_string(in.byte_size) + " bytes\n  request: " + p.label};
    }
    if (size == 0) continue;
    if (memory == TRITONSERVER_MEMORY_GPU) {
      const int64_t n = static_cast<int64_t>(size);
      vigil_tensor src{in.name.c_str(), VIGIL_DTYPE_UINT8, &n, 1, const_cast<void*>(data), size, VIGIL_MEMORY_CUDA,
                       static_cast<int>(memory_id), nullptr};
      vigil_tensor dst{in.name.c_str(), VIGIL_DTYPE_UINT8, &n, 1, in.gathered.data() + offset, size,
                       VIGIL_MEMORY_HOST, 0, nullptr};
      if (vigil_status* st = vigil_session_copy(inst.session, &src, &dst)) {
        std::vector<std::string> context = Context(inst, p.label);
        context.push_back("input: " + in.name + " (in GPU " + std::to_string(memory_id) + " memory)");
        return FromVigil(st, context);
      }
    } else {
      std::memcpy(in.gathered.data() + offset, data, size);
    }
    offset += size;
  }
  if (offset != in.byte_size) {
    return Problem{TRITONSERVER_ERROR_INVALID_ARG, "input '" + in.name + "': its buffers hold " +
                                                       std::to_string(offset) + " bytes, its byte size is " +
                                                       std::to_string(in.byte_size) + "\n  request: " + p.label};
  }
  in.data = in.byte_size ? in.gathered.data() : nullptr;
  p.inputs.push_back(std::move(in));
  return std::nullopt;
}

MaybeProblem Collect(InstanceState& inst, Pending& p) {
  uint32_t count = 0;
  if (MaybeProblem e = Call(TRITONBACKEND_RequestInputCount(p.request, &count), "TRITONBACKEND_RequestInputCount")) {
    return e;
  }
  for (uint32_t i = 0; i < count; ++i) {
    if (MaybeProblem e = CollectInput(inst, p, i)) return e;
  }
  if (MaybeProblem e = Call(TRITONBACKEND_RequestOutputCount(p.request, &count), "TRITONBACKEND_RequestOutputCount")) {
    return e;
  }
  for (uint32_t i = 0; i < count; ++i) {
    const char* name = nullptr;
    if (MaybeProblem e = Call(TRITONBACKEND_RequestOutputName(p.request, i, &name), "TRITONBACKEND_RequestOutputName")) {
      return e;
    }
    p.outputs.emplace_back(name ? name : "");
  }
  // Triton lists every output when the client names none; should a request
  // still come with none, it gets them all, as from Triton.
  if (p.outputs.empty()) {
    for (const TensorConfig& o : inst.model->outputs) p.outputs.push_back(o.name);
  }
  if (inst.model->max_batch_size > 0 && !p.inputs.empty() && !p.inputs[0].shape.empty()) {
    p.batch = p.inputs[0].shape[0];
  }
  return std::nullopt;
}

// vigil's own check of the request's inputs: names, dtypes, shapes (symbolic
// dims bound consistently), byte sizes, each mismatch with its likely cause.
MaybeProblem Validate(const InstanceState& inst, const Pending& p) {
  std::vector<vigil_tensor> tensors;
  for (const RequestInput& in : p.inputs) tensors.push_back(HostTensor(in.name, in.dtype, in.shape, in.data, in.byte_size));
  if (vigil_status* st = vigil_session_check(inst.session, tensors.data(), tensors.size(), nullptr)) {
    return FromVigil(st, Context(inst, p.label));
  }
  return std::nullopt;
}

// Requests with equal keys can be joined along dim 0: the same inputs with
// the same dtypes and the same dims past the batch dim.
std::string JoinKey(const Pending& p) {
  std::vector<const RequestInput*> inputs;
  for (const RequestInput& in : p.inputs) inputs.push_back(&in);
  std::sort(inputs.begin(), inputs.end(), [](auto* a, auto* b) { return a->name < b->name; });
  std::string key;
  for (const RequestInput* in : inputs) {
    key += in->name + '\0' + std::to_string(in->dtype) + ':' +
           ShapeText(in->shape.data() + std::min<size_t>(1, in->shape.size()),
                     in->shape.size() - std::min<size_t>(1, in->shape.size())) +
           '\0';
  }
  return key;
}

const RequestInput* FindInput(const Pending& p, const std::string& name) {
  for (const RequestInput& in : p.inputs) {
    if (in.name == name) return &in;
  }
  return nullptr;
}

// ---- Running --------------------------------------------------------------------------------

void* Stage(InstanceState& inst, size_t index, size_t bytes) {
  if (bytes == 0) return nullptr;
  if (inst.staging.size() <= index) inst.staging.resize(index + 1);
  vigil_status* st = nullptr;
  if (void* data = inst.staging[index].Reserve(inst.session, bytes, &st)) return data;
  if (!inst.warned_plain_staging) {
    Log(TRITONSERVER_LOG_WARN, "vigil: instance " + inst.name + ": no page-locked staging (" +
                                   vigil_status_summary(st) + "); joined batches use plain host memory");
    inst.warned_plain_staging = true;
  }
  vigil_status_release(st);
  return inst.staging[index].ReservePlain(bytes);
}

std::string GroupLabel(const std::vector<Pending*>& group, int64_t total) {
  if (group.size() == 1) return group[0]->label;
  std::string s;
  for (const Pending* p : group) s += (s.empty() ? "" : ", ") + p->label;
  return s + " (joined into one batch of " + std::to_string(total) + ")";
}

void Run(InstanceState& inst, const std::vector<Pending*>& group) {
  const bool joined = group.size() > 1;
  int64_t total = 0;
  for (const Pending* p : group) total += p->batch;

  // The outputs any of them asked for, in the order first asked.
  std::vector<std::string> names;
  for (const Pending* p : group) {
    for (const std::string& o : p->outputs) {
      if (std::find(names.begin(), names.end(), o) == names.end()) names.push_back(o);
    }
  }
  std::vector<const char*> c_names;
  for (const std::string& n : names) c_names.push_back(n.c_str());

  std::vector<std::vector<int64_t>> shapes;  // the joined shapes, alive during the run
  std::vector<vigil_tensor> tensors;
  const Pending& first = *group[0];
  shapes.reserve(first.inputs.size());
  for (size_t k = 0; k < first.inputs.size(); ++k) {
    const RequestInput& in = first.inputs[k];
    if (!joined) {
      tensors.push_back(HostTensor(in.name, in.dtype, in.shape, in.data, in.byte_size));
      continue;
    }
    size_t bytes = 0;
    for (const Pending* p : group) bytes += FindInput(*p, in.name)->byte_size;
    unsigned char* staged = static_cast<unsigned char*>(Stage(inst, k, bytes));
    size_t offset = 0;
    for (const Pending* p : group) {
      const RequestInput* part = FindInput(*p, in.name);
      if (part->byte_size) std::memcpy(staged + offset, part->data, part->byte_size);
      offset += part->byte_size;
    }
    shapes.push_back(in.shape);
    shapes.back()[0] = total;
    tensors.push_back(HostTensor(in.name, in.dtype, shapes.back(), staged, bytes));
  }

  std::vector<vigil_value*> raw(names.size(), nullptr);
  const uint64_t compute_start = NowNs();
  vigil_status* st =
      vigil_session_run(inst.session, tensors.data(), tensors.size(), c_names.data(), c_names.size(), raw.data());
  const uint64_t compute_end = NowNs();
  std::vector<ValuePtr> values;
  for (vigil_value* v : raw) values.emplace_back(v, vigil_value_release);

  if (st) {
    if (joined && vigil_status_code(st) == VIGIL_ERROR_OUT_OF_MEMORY) {
      Log(TRITONSERVER_LOG_WARN, "vigil: instance " + inst.name + ": a joined batch of " + std::to_string(total) +
                                     " does not fit (" + vigil_status_summary(st) + "); running its " +
                                     std::to_string(group.size()) + " requests one by one");
      vigil_status_release(st);
      for (Pending* p : group) Run(inst, {p});
      return;
    }
    const Problem problem = FromVigil(st, Context(inst, GroupLabel(group, total)));
    for (Pending* p : group) p->problem = problem;
    return;
  }
  if (joined) {
    for (size_t i = 0; i < values.size(); ++i) {
      const size_t rank = vigil_value_rank(values[i].get());
      if (rank == 0 || vigil_value_shape(values[i].get())[0] != total) {
        Log(TRITONSERVER_LOG_WARN,
            "vigil: instance " + inst.name + ": output '" + names[i] + "' of a joined batch of " +
                std::to_string(total) + " has shape " + ShapeText(vigil_value_shape(values[i].get()), rank) +
                ", whose dim 0 is not the batch; running its requests one by one");
        for (Pending* p : group) Run(inst, {p});
        return;
      }
    }
  }

  int64_t offset = 0;  // in batch items
  for (Pending* p : group) {
    p->compute_start = compute_start;
    p->compute_end = compute_end;
    p->computed = true;
    std::vector<OutputSlice> slices;
    for (const std::string& name : p->outputs) {
      const size_t i = static_cast<size_t>(std::find(names.begin(), names.end(), name) - names.begin());
      const vigil_value* v = values[i].get();
      OutputSlice s;
      s.name = name;
      s.dtype = vigil_value_dtype(v);
      s.shape.assign(vigil_value_shape(v), vigil_value_shape(v) + vigil_value_rank(v));
      s.data = static_cast<const unsigned char*>(vigil_value_data(v));
      s.byte_size = vigil_value_byte_size(v);
      if (joined) {
        const size_t per_item = s.byte_size / static_cast<size_t>(total);
        s.data += per_item * static_cast<size_t>(offset);
        s.byte_size = per_item * static_cast<size_t>(p->batch);
        s.shape[0] = p->batch;
      }
      slices.push_back(std::move(s));
    }
    MaybeProblem problem;
    p->answered = SendOutputs(p->request, slices, inst.session, inst.device_id, &problem);
    if (problem) p->problem = std::move(problem);
    p->exec_end = NowNs();
    offset += p->batch;
  }
}

// Every request gets its answer (an error response if nothing else went
// out), its statistics and its release.
void Finish(TRITONBACKEND_ModelInstance* triton_instance, Pending& p, uint64_t exec_start) {
  try {
    if (!p.answered) {
      if (!p.problem) p.problem = Problem{TRITONSERVER_ERROR_INTERNAL, "vigil backend: the request was not run"};
      p.answered = SendError(p.request, *p.problem);
    }
    const bool success = p.computed && !p.problem;
    const uint64_t exec_end = p.exec_end ? p.exec_end : NowNs();
    ReportAndRelease(triton_instance, p.request, success, exec_start, success ? p.compute_start : exec_start,
                     success ? p.compute_end : exec_end, exec_end);
  } catch (...) {
    TRITONSERVER_Error* e = TRITONBACKEND_RequestRelease(p.request, kTritonRequestReleaseAll);
    if (e) TRITONSERVER_ErrorDelete(e);
  }
}

}  // namespace

void ExecuteRequests(InstanceState& inst, TRITONBACKEND_ModelInstance* triton_instance,
                     TRITONBACKEND_Request** requests, uint32_t request_count) {
  const uint64_t exec_start = NowNs();
  std::vector<Pending> pending(request_count);
  for (uint32_t i = 0; i < request_count; ++i) pending[i].request = requests[i];
  try {
    for (uint32_t i = 0; i < request_count; ++i) {
      Pending& p = pending[i];
      const char* id = nullptr;
      TRITONSERVER_Error* e = TRITONBACKEND_RequestId(p.request, &id);
      if (e) TRITONSERVER_ErrorDelete(e);
      p.label = id && *id ? "'" + std::string(id) + "'"
                          : "(no id; " + std::to_string(i + 1) + " of " + std::to_string(request_count) +
                                " in this execution)";
      p.problem = Collect(inst, p);
      if (!p.problem) p.problem = Validate(inst, p);
    }
    // Group what can be joined, in arrival order; everything else runs alone.
    std::vector<std::vector<Pending*>> groups;
    std::map<std::string, size_t> group_of;
    for (Pending& p : pending) {
      if (p.problem) continue;
      // Without a batch dim, or with an empty batch, a request runs alone.
      if (inst.model->max_batch_size <= 0 || p.batch < 1) {
        groups.push_back({&p});
        continue;
      }
      auto [it, added] = group_of.emplace(JoinKey(p), groups.size());
      if (added) groups.emplace_back();
      groups[it->second].push_back(&p);
    }
    for (const std::vector<Pending*>& group : groups) Run(inst, group);
  } catch (const std::exception& e) {
    for (Pending& p : pending) {
      if (!p.answered && !p.problem) {
        p.problem = Problem{TRITONSERVER_ERROR_INTERNAL, std::string("vigil backend: ") + e.what()};
      }
    }
  } catch (...) {
    for (Pending& p : pending) {
      if (!p.answered && !p.problem) p.problem = Problem{TRITONSERVER_ERROR_INTERNAL, "vigil backend: unknown error"};
    }
  }

  uint64_t batch = 0, compute_start = UINT64_MAX, compute_end = 0;
  for (const Pending& p : pending) {
    if (!p.computed) continue;
    batch += static_cast<uint64_t>(p.batch);
    compute_start = std::min(compute_start, p.compute_start);
    compute_end = std::max(compute_end, p.compute_end);
  }
  for (Pending& p : pending) Finish(triton_instance, p, exec_start);
  // The requests are released: nothing may escape to the caller any more.
  try {
    if (batch > 0) ReportBatch(triton_instance, batch, exec_start, compute_start, compute_end, NowNs());
  } catch (...) {
  }
}

}  // namespace vigil::triton
