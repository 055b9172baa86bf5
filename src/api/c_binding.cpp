// vigil.h: IOBinding (inputs and outputs in device memory, a caller's
// stream), tensor files, values as tensors, the doctor's report.
#include <cstring>
#include <map>

#include "api/c_api_internal.h"
#include "doctor/doctor.h"
#include "runtime/tensor_file.h"

struct vigil_io_binding {
  const vigil_session* session = nullptr;
  std::map<std::string, vigil::runtime::InputBinding> inputs;  // by name
  std::vector<std::string> input_order;
  struct Output {
    std::string name;
    bool caller_buffer = false;
    vigil::runtime::Tensor buffer;  // the caller's buffer (a view)
    vigil_memory memory = VIGIL_MEMORY_HOST;
  };
  std::vector<Output> outputs;
  std::vector<vigil::runtime::NamedTensor> results;  // of the last run, in outputs' order
};

namespace vigil::api {
namespace {

bool IsModelOutput(const vigil_session* s, const std::string& name) {
  for (const auto& o : s->outputs) {
    if (o.name == name) return true;
  }
  return false;
}

Status UnknownOutput(const vigil_session* s, const std::string& name) {
  std::string known;
  for (const auto& o : s->outputs) known += (known.empty() ? "" : ", ") + o.name;
  return InvalidInputError("the model has no output named '{}'", name).WithFact("outputs", known);
}

vigil_io_binding::Output& OutputSlot(vigil_io_binding* b, const std::string& name) {
  for (auto& o : b->outputs) {
    if (o.name == name) return o;
  }
  auto& added = b->outputs.emplace_back();
  added.name = name;
  return added;
}

Status CheckFits(const runtime::Tensor& produced, const runtime::Tensor& buffer, const std::string& name) {
  if (produced.dtype() != buffer.dtype() || produced.shape() != buffer.shape()) {
    return InvalidInputError("output '{}' is {}, but the buffer bound to it is {}", name, produced.Describe(),
                             buffer.Describe())
        .WithFix("bind a buffer of the output's dtype and shape, or bind the output with bind_output_to and let "
                 "vigil allocate it");
  }
  return Status::Ok();
}

Status RunBinding(const vigil_session* s, vigil_io_binding* b, void* stream) {
  std::vector<runtime::InputBinding> inputs;
  for (const std::string& name : b->input_order) inputs.push_back(b->inputs.at(name));
  runtime::RunOptions run;
  run.device_id = s->device_id;
  run.wait_for_stream = stream;
  bool any_device = false;
  for (const auto& o : b->outputs) any_device |= o.memory == VIGIL_MEMORY_CUDA;
  run.outputs_on_device = any_device;
  b->results.clear();
  VIGIL_ASSIGN_OR_RETURN(auto all, s->session().Run(std::move(inputs), run));
  const std::vector<vigil_io_binding::Output> wanted =
      b->outputs.empty() ? [&] {
        std::vector<vigil_io_binding::Output> v;
        for (const auto& o : s->outputs) v.emplace_back().name = o.name;
        return v;
      }()
                         : b->outputs;
  for (const auto& want : wanted) {
    runtime::NamedTensor* got = nullptr;
    for (auto& nt : all) {
      if (nt.name == want.name) got = &nt;
    }
    if (!got) return InternalError("output '{}' was not produced", want.name);
    VIGIL_RETURN_IF_ERROR(RequireTensorOutput(*got));
    runtime::Tensor t = got->tensor;
    if (want.caller_buffer) {
      VIGIL_RETURN_IF_ERROR(CheckFits(t, want.buffer, want.name));
      VIGIL_RETURN_IF_ERROR(s->session().CopyTensor(t, want.buffer));
      t = want.buffer;
    } else if (want.memory == VIGIL_MEMORY_HOST && !t.on_host()) {
      VIGIL_ASSIGN_OR_RETURN(runtime::Tensor host, runtime::Tensor::Allocate(t.dtype(), t.shape()));
      VIGIL_RETURN_IF_ERROR(s->session().CopyTensor(t, host));
      t = std::move(host);
    } else if (want.memory == VIGIL_MEMORY_CUDA && t.on_host()) {
      VIGIL_ASSIGN_OR_RETURN(runtime::Tensor dev, s->session().AllocateDeviceBuffer(t.dtype(), t.shape()));
      VIGIL_RETURN_IF_ERROR(s->session().CopyTensor(t, dev));
      t = std::move(dev);
    }
    b->results.push_back({want.name, std::move(t)});
  }
  return Status::Ok();
}

}  // namespace
}  // namespace vigil::api

using vigil::api::Guarded;
using vigil::api::NullArgument;

extern "C" {

vigil_status* vigil_io_binding_create(const vigil_session* session, vigil_io_binding** binding) {
  return Guarded([&]() -> vigil::Status {
    if (!binding) return NullArgument("vigil_io_binding_create", "binding");
    *binding = nullptr;
    if (!session) return NullArgument("vigil_io_binding_create", "session");
    VIGIL_RETURN_IF_ERROR(session->InProcess("vigil_io_binding_create").status());
    auto* b = new vigil_io_binding;
    b->session = session;
    *binding = b;
    return vigil::Status::Ok();
  });
}

void vigil_io_binding_release(vigil_io_binding* binding) { delete binding; }

vigil_status* vigil_io_binding_bind_input(vigil_io_binding* b, const vigil_tensor* tensor) {
  return Guarded([&]() -> vigil::Status {
    if (!b) return NullArgument("vigil_io_binding_bind_input", "binding");
    if (!tensor) return NullArgument("vigil_io_binding_bind_input", "tensor");
    if (!tensor->name || !*tensor->name) {
      return vigil::InvalidInputError("vigil_io_binding_bind_input: the tensor has no name")
          .WithFix("name the model input the buffer is for");
    }
    VIGIL_ASSIGN_OR_RETURN(vigil::runtime::InputBinding in, vigil::api::ToBinding(*tensor, "bind_input"));
    if (!b->inputs.count(in.name)) b->input_order.push_back(in.name);
    b->inputs[in.name] = std::move(in);
    return vigil::Status::Ok();
  });
}

vigil_status* vigil_io_binding_bind_output(vigil_io_binding* b, const vigil_tensor* tensor) {
  return Guarded([&]() -> vigil::Status {
    if (!b) return NullArgument("vigil_io_binding_bind_output", "binding");
    if (!tensor) return NullArgument("vigil_io_binding_bind_output", "tensor");
    const std::string name = tensor->name ? tensor->name : "";
    if (!vigil::api::IsModelOutput(b->session, name)) return vigil::api::UnknownOutput(b->session, name);
    VIGIL_ASSIGN_OR_RETURN(vigil::runtime::Tensor view, vigil::api::ToTensorView(*tensor, "bind_output"));
    if (!view.on_host()) {
      VIGIL_RETURN_IF_ERROR(b->session->session().HasDeviceBackend()
                                ? vigil::Status::Ok()
                                : vigil::InvalidInputError("output '{}' is bound to device memory, but no node of this "
                                                           "session runs on a device",
                                                           name));
    }
    auto& slot = vigil::api::OutputSlot(b, name);
    slot.caller_buffer = true;
    slot.buffer = std::move(view);
    slot.memory = tensor->memory;
    return vigil::Status::Ok();
  });
}

vigil_status* vigil_io_binding_bind_output_to(vigil_io_binding* b, const char* name, vigil_memory memory) {
  return Guarded([&]() -> vigil::Status {
    if (!b) return NullArgument("vigil_io_binding_bind_output_to", "binding");
    if (!name) return NullArgument("vigil_io_binding_bind_output_to", "name");
    if (!vigil::api::IsModelOutput(b->session, name)) return vigil::api::UnknownOutput(b->session, name);
    if (const int64_t kind = vigil::api::RawEnum(memory); kind != VIGIL_MEMORY_HOST && kind != VIGIL_MEMORY_CUDA) {
      return vigil::InvalidInputError("bind_output_to: memory kind {} is not a vigil_memory", kind);
    }
    if (memory == VIGIL_MEMORY_CUDA && !b->session->session().HasDeviceBackend()) {
      return vigil::InvalidInputError("output '{}' cannot be kept on the device: no node of this session runs on one",
                                      name)
          .WithFix("create the session with the CUDA backend, or bind the output to host memory");
    }
    auto& slot = vigil::api::OutputSlot(b, name);
    slot.caller_buffer = false;
    slot.buffer = {};
    slot.memory = memory;
    return vigil::Status::Ok();
  });
}

void vigil_io_binding_clear(vigil_io_binding* b) {
  if (!b) return;
  b->inputs.clear();
  b->input_order.clear();
  b->outputs.clear();
  b->results.clear();
}

vigil_status* vigil_session_run_with_binding(const vigil_session* s, vigil_io_binding* b, void* stream) {
  return Guarded([&]() -> vigil::Status {
    if (!s) return NullArgument("vigil_session_run_with_binding", "session");
    if (!b) return NullArgument("vigil_session_run_with_binding", "binding");
    if (b->session != s) {
      return vigil::InvalidInputError("the io_binding was made for another session")
          .WithFix("create the binding with this session's io_binding()");
    }
    return vigil::api::RunBinding(s, b, stream);
  });
}

size_t vigil_io_binding_output_count(const vigil_io_binding* b) { return b ? b->results.size() : 0; }

vigil_status* vigil_io_binding_get_output(const vigil_io_binding* b, size_t index, vigil_value** value) {
  return Guarded([&]() -> vigil::Status {
    if (!value) return NullArgument("vigil_io_binding_get_output", "value");
    *value = nullptr;
    if (!b) return NullArgument("vigil_io_binding_get_output", "binding");
    if (index >= b->results.size()) {
      return vigil::InvalidInputError("vigil_io_binding_get_output: index {} is out of range; the last run gave {}",
                                      index, b->results.size());
    }
    const auto& r = b->results[index];
    *value = vigil::api::NewValue(r.name, r.tensor, b->session->assembled, b->session->device_id);
    return vigil::Status::Ok();
  });
}

void vigil_value_as_tensor(const vigil_value* v, vigil_tensor* t) {
  if (!t) return;
  if (!v) {
    std::memset(t, 0, sizeof(*t));
    return;
  }
  *t = vigil_tensor{v->name.c_str(),
                    static_cast<vigil_dtype>(v->tensor.dtype()),
                    v->tensor.shape().data(),
                    v->tensor.rank(),
                    const_cast<void*>(v->tensor.raw_data()),
                    v->tensor.byte_size(),
                    v->tensor.on_host() ? VIGIL_MEMORY_HOST : VIGIL_MEMORY_CUDA,
                    v->device_id,
                    nullptr};
}

vigil_status* vigil_tensor_file_read(const char* path, vigil_value** value) {
  return Guarded([&]() -> vigil::Status {
    if (!value) return NullArgument("vigil_tensor_file_read", "value");
    *value = nullptr;
    if (!path) return NullArgument("vigil_tensor_file_read", "path");
    VIGIL_ASSIGN_OR_RETURN(vigil::runtime::TensorFile file, vigil::runtime::ReadTensorFile(path));
    *value = vigil::api::NewValue("", std::move(file.tensor), nullptr);
    return vigil::Status::Ok();
  });
}

vigil_status* vigil_tensor_file_write_npy(const char* path, const vigil_tensor* tensor) {
  return Guarded([&]() -> vigil::Status {
    if (!path) return NullArgument("vigil_tensor_file_write_npy", "path");
    if (!tensor) return NullArgument("vigil_tensor_file_write_npy", "tensor");
    VIGIL_ASSIGN_OR_RETURN(vigil::runtime::Tensor t, vigil::api::ToTensorView(*tensor, "vigil_tensor_file_write_npy"));
    if (!t.on_host()) {
      return vigil::InvalidInputError("vigil_tensor_file_write_npy: the tensor is in device memory")
          .WithFix("copy it to the host first");
    }
    return vigil::runtime::WriteNpy(path, t);
  });
}

vigil_status* vigil_doctor_report_json(char** json) {
  return Guarded([&]() -> vigil::Status {
    if (!json) return NullArgument("vigil_doctor_report_json", "json");
    *json = nullptr;
    vigil::doctor::DoctorOptions options;
    // The live check re-executes the vigil command; a library call has none.
    options.live_check = false;
    vigil::doctor::DoctorReport report = vigil::doctor::RunDoctor(options);
    std::string text = vigil::doctor::RenderReportJson(report).dump(-1, ' ', false,
                                                                    nlohmann::json::error_handler_t::replace);
    char* out = new char[text.size() + 1];
    std::memcpy(out, text.c_str(), text.size() + 1);
    *json = out;
    return vigil::Status::Ok();
  });
}

}  // extern "C"
