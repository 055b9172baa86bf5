// vigil.h: session options, creation, model interface, check, plan, run.
#include <algorithm>
#include <cstddef>
#include <cstring>

#include <nlohmann/json.hpp>

#include "api/c_api_internal.h"
#include "api/model_description.h"
#include "api/session_profile.h"
#include "ir/dtype.h"

namespace vigil::api {

// The sizes vigil_session_options has had (on LP64, where the struct is
// 8-byte aligned), oldest first: API version 2 as first released (up to
// enable_profiling: 120 bytes), then with run_as_float16 (128, its last 4
// bytes padding), with allow_tf32x3 (128, filling them), with
// measure_first_run (API version 3: 136, the last 4 bytes padding), and
// with tf32x3_convolutions (API version 4: 136, filling them). A caller's
// struct of an older size is read up to its end and later fields keep
// their defaults; bytes that were padding in the caller's version are read
// as the field that later took them (its init wrote zeros there, so a
// 128-byte struct of the run_as_float16 version reads allow_tf32x3 as 0:
// every float32 product on CUDA cores).
constexpr size_t kOptionsAlign = alignof(vigil_session_options);
constexpr size_t EndOfVersion(size_t first_later_field) {
  return (first_later_field + kOptionsAlign - 1) / kOptionsAlign * kOptionsAlign;
}
// The size the unsized vigil_session_options_init writes: API versions 3 and 4's.
constexpr size_t kUnsizedInitBytes = EndOfVersion(offsetof(vigil_session_options, tf32x3_convolutions));
static_assert(sizeof(vigil_session_options) == kUnsizedInitBytes,
              "a new field: keep the unsized init at its old size (kUnsizedInitBytes) and list the new size below");

bool KnownOptionsSize(uint32_t size) {
  constexpr size_t kSizes[] = {EndOfVersion(offsetof(vigil_session_options, run_as_float16)),
                               EndOfVersion(offsetof(vigil_session_options, measure_first_run)),
                               sizeof(vigil_session_options)};
  for (size_t known : kSizes) {
    if (size == known) return true;
  }
  return false;
}

// The defaults, writing no byte at or past `size`: the library's defaults
// built whole, then as much of them as the caller's struct holds (a size
// too small for struct_size itself gets zeros), and zeros past the
// library's struct for a larger one.
void InitOptions(vigil_session_options* o, size_t size) {
  if (!o) return;
  vigil_session_options d;
  std::memset(&d, 0, sizeof d);  // padding too: it is copied
  const size_t ours = std::min(size, sizeof d);
  d.struct_size = ours >= sizeof d.struct_size ? static_cast<uint32_t>(ours) : 0;
  d.layout = VIGIL_LAYOUT_AUTO;
  d.constant_folding = 1;
  d.allow_tf32x3 = 1;
  d.measure_first_run = 1;
  std::memcpy(o, &d, ours);
  if (size > sizeof d) std::memset(reinterpret_cast<unsigned char*>(o) + sizeof d, 0, size - sizeof d);
}

Result<SessionConfig> ConfigFromOptions(const vigil_session_options* caller) {
  SessionConfig c;
  if (!caller) return c;
  if (!KnownOptionsSize(caller->struct_size)) {
    return InvalidInputError("vigil_session_options.struct_size is {}, not the size of any version of the struct "
                             "(this library's is {} bytes)",
                             caller->struct_size, sizeof(*caller))
        .WithCause("the options were not set up with vigil_session_options_init")
        .WithFix("call vigil_session_options_init(&options) before setting fields");
  }
  vigil_session_options full;
  vigil_session_options_init(&full);
  std::memcpy(&full, caller, caller->struct_size);
  const vigil_session_options* o = &full;
  if (o->backend_count > 0 && !o->backends) return NullArgument("vigil_session_create", "options.backends");
  for (size_t i = 0; i < o->backend_count; ++i) {
    switch (o->backends[i]) {
      case VIGIL_BACKEND_CPU: c.backends.push_back(BackendKind::kCpu); break;
      case VIGIL_BACKEND_CUDA: c.backends.push_back(BackendKind::kCuda); break;
      default:
        return InvalidInputError("options.backends[{}] is {}, not a vigil_backend", i, static_cast<int>(o->backends[i]))
            .WithFix("use VIGIL_BACKEND_CUDA or VIGIL_BACKEND_CPU");
    }
  }
  if (o->layout != VIGIL_LAYOUT_AUTO && o->layout != VIGIL_LAYOUT_NCHW) {
    return InvalidInputError("options.layout is {}, not a vigil_layout", static_cast<int>(o->layout));
  }
  c.device_id = o->device_id;
  c.allow_tf32 = o->allow_tf32 != 0;
  c.deterministic = o->deterministic != 0;
  c.gpu_mem_limit = o->gpu_mem_limit;
  c.layout = o->layout == VIGIL_LAYOUT_NCHW ? runtime::ConvLayout::kAsModel : runtime::ConvLayout::kNhwcWhereFaster;
  c.cuda_graphs = o->cuda_graphs != 0;
  if (o->cudnn_log_file) c.cudnn_log_file = o->cudnn_log_file;
  c.tune = o->tune != 0;
  if (o->tuning_cache_file) c.tuning_cache_file = o->tuning_cache_file;
  c.constant_folding = o->constant_folding != 0;
  if (o->cuda_module_path) c.cuda_module_path = o->cuda_module_path;
  c.isolate = o->isolate != 0;
  c.isolate_timeout_s = o->isolate_timeout_s;
  c.intra_op_num_threads = o->intra_op_num_threads;
  c.enable_profiling = o->enable_profiling != 0;
  c.run_as_float16 = o->run_as_float16 != 0;
  c.allow_tf32x3 = o->allow_tf32x3 != 0;
  c.measure_first_run = o->measure_first_run != 0;
  c.tf32x3_convolutions = o->tf32x3_convolutions != 0;
  return c;
}

namespace {

vigil_session::IoInfo MakeIoInfo(const ir::ValueInfo& vi) {
  vigil_session::IoInfo info;
  info.name = vi.name;
  if (vi.has_type && vi.type.kind == ir::TypeInfo::Kind::kTensor) {
    info.dtype = static_cast<vigil_dtype>(vi.type.elem_type);
    if (vi.type.shape.rank_known) {
      info.rank = vi.type.shape.dims.size();
      for (const ir::Dim& d : vi.type.shape.dims) {
        info.dims.push_back(d.value ? *d.value : -1);
        info.dim_names.push_back(d.value ? std::string() : d.param);
      }
    }
  }
  for (const std::string& n : info.dim_names) info.dim_name_ptrs.push_back(n.c_str());
  return info;
}

Status Create(Result<ir::Model> model, bool from_memory, const vigil_session_options* options,
              vigil_session** out) {
  VIGIL_ASSIGN_OR_RETURN(SessionConfig config, ConfigFromOptions(options));
  VIGIL_RETURN_IF_ERROR(ValidateConfig(config));
  if (!model.ok()) return std::move(model).TakeStatus();
  auto session = std::make_unique<vigil_session>();
  session->model_path = from_memory ? std::string() : model->path;
  session->config = config;
  session->device_id = config.device_id;
  const std::vector<std::string>* backends = nullptr;
  if (config.isolate) {
    VIGIL_ASSIGN_OR_RETURN(session->isolated, CreateIsolated(*model, from_memory, config));
    for (const ir::ValueInfo& vi : session->isolated->inputs.required) session->inputs.push_back(MakeIoInfo(vi));
    for (const ir::ValueInfo& vi : session->isolated->outputs) session->outputs.push_back(MakeIoInfo(vi));
    backends = &session->isolated->backends;
  } else {
    VIGIL_ASSIGN_OR_RETURN(AssembledSession assembled, AssembleSession(std::move(model).value(), config));
    session->assembled = std::make_shared<AssembledSession>(std::move(assembled));
    for (const ir::ValueInfo& vi : session->session().inputs().required) session->inputs.push_back(MakeIoInfo(vi));
    for (const ir::ValueInfo& vi : session->session().outputs()) session->outputs.push_back(MakeIoInfo(vi));
    backends = &session->assembled->backends;
  }
  for (const std::string& b : *backends) session->backends += (session->backends.empty() ? "" : ",") + b;
  *out = session.release();
  return Status::Ok();
}

Result<std::vector<runtime::InputBinding>> ToBindings(const vigil_tensor* inputs, size_t count, const char* call) {
  if (count > 0 && !inputs) return NullArgument(call, "inputs");
  std::vector<runtime::InputBinding> bindings;
  for (size_t i = 0; i < count; ++i) {
    VIGIL_ASSIGN_OR_RETURN(runtime::InputBinding b, ToBinding(inputs[i], call));
    bindings.push_back(std::move(b));
  }
  return bindings;
}

char* CopyString(const std::string& s) {
  char* out = new char[s.size() + 1];
  std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

std::string Dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

}  // namespace

Status RequireTensorOutput(const runtime::NamedTensor& out) {
  if (out.tensor.is_dense()) return Status::Ok();
  return UnsupportedError("output '{}' is {}; the C API and the packages built on it return tensors only", out.name,
                          out.tensor.Describe())
      .WithFix("end the graph with ConcatFromSequence (a sequence) or OptionalGetElement (an optional), or use the "
               "C++ runtime::Session, which returns sequences and optionals");
}

namespace {

Status SelectOutputs(const vigil_session* s, std::vector<runtime::NamedTensor> all, const char* const* names,
                     size_t count, vigil_value** outputs) {
  std::vector<size_t> pick;
  if (!names) {
    if (count != all.size()) {
      return InvalidInputError("vigil_session_run: output_count is {}, the model has {} outputs", count, all.size())
          .WithFix("pass vigil_session_output_count(session) outputs, or name the outputs wanted");
    }
    for (size_t i = 0; i < all.size(); ++i) pick.push_back(i);
  } else {
    for (size_t k = 0; k < count; ++k) {
      if (!names[k]) return NullArgument("vigil_session_run", "output_names[i]");
      size_t found = all.size();
      for (size_t i = 0; i < all.size(); ++i) {
        if (all[i].name == names[k]) found = i;
      }
      if (found == all.size()) {
        std::string known;
        for (const auto& o : all) known += (known.empty() ? "" : ", ") + o.name;
        return InvalidInputError("the model has no output named '{}'", names[k]).WithFact("outputs", known);
      }
      pick.push_back(found);
    }
  }
  for (size_t idx : pick) VIGIL_RETURN_IF_ERROR(RequireTensorOutput(all[idx]));
  for (size_t k = 0; k < pick.size(); ++k) {
    outputs[k] = NewValue(all[pick[k]].name, std::move(all[pick[k]].tensor), s->assembled, s->device_id);
  }
  return Status::Ok();
}

}  // namespace

Result<runtime::InputBinding> ToBinding(const vigil_tensor& t, const char* call) {
  runtime::InputBinding b;
  b.name = t.name ? t.name : "";
  const std::string what = b.name.empty() ? std::string("an input given by position") : "input '" + b.name + "'";
  const int64_t dtype = RawEnum(t.dtype), memory = RawEnum(t.memory);
  if (dtype < INT32_MIN || dtype > INT32_MAX || !ir::IsKnownDataType(static_cast<int32_t>(dtype)) ||
      dtype == VIGIL_DTYPE_STRING) {
    return InvalidInputError("{}: {} has dtype {}, which is not a vigil_dtype of a numeric tensor", call, what, dtype)
        .WithFix("use one of VIGIL_DTYPE_FLOAT32, VIGIL_DTYPE_FLOAT16, VIGIL_DTYPE_INT64, ...");
  }
  if (t.rank > 0 && !t.shape) return NullArgument(call, "tensor.shape");
  if (t.rank > 64) return InvalidInputError("{}: {} has rank {}; vigil accepts at most 64", call, what, t.rank);
  b.dtype = static_cast<ir::DataType>(dtype);  // a known value, checked above
  b.shape.assign(t.shape, t.shape + t.rank);
  b.data = t.data;
  b.byte_size = t.byte_size;
  b.source = t.source ? t.source : "";
  if (memory == VIGIL_MEMORY_CUDA) {
    b.device = runtime::Device::kCuda;
  } else if (memory != VIGIL_MEMORY_HOST) {
    return InvalidInputError("{}: {} has memory kind {}, not a vigil_memory", call, what, memory);
  }
  return b;
}

Result<runtime::Tensor> ToTensorView(const vigil_tensor& t, const char* call) {
  VIGIL_ASSIGN_OR_RETURN(runtime::InputBinding b, ToBinding(t, call));
  auto count = runtime::ElementCount(b.shape);
  auto bytes = count ? ir::DataTypeStorageBytes(b.dtype, *count) : std::nullopt;
  if (!bytes || *bytes != b.byte_size) {
    return InvalidInputError("{}: '{}' is {}{} ({} bytes) but its buffer has {} bytes", call, b.name,
                             ir::DataTypeName(b.dtype), fmt::format("[{}]", fmt::join(b.shape, ",")),
                             bytes ? std::to_string(*bytes) : std::string("?"), b.byte_size);
  }
  if (b.byte_size > 0 && !b.data) return NullArgument(call, "tensor.data");
  void* data = const_cast<void*>(b.data);
  if (b.device == runtime::Device::kHost) return runtime::Tensor::View(b.dtype, b.shape, data);
  return runtime::Tensor::OnDevice(b.device, b.dtype, b.shape, data, nullptr);
}

}  // namespace vigil::api

vigil::Result<const vigil::runtime::Session*> vigil_session::InProcess(const char* call) const {
  if (assembled) return assembled->session.get();
  return vigil::UnsupportedError("{} is not available on an isolated session: its model runs in a child process, "
                                 "one per run",
                                 call)
      .WithFix("create a second session without isolate for this call");
}

using vigil::api::Guarded;
using vigil::api::NullArgument;

extern "C" {

void vigil_session_options_init_sized(vigil_session_options* o, size_t size) { vigil::api::InitOptions(o, size); }

// The exported symbol of the unsized initialiser (the header's macro of the
// same name is not expanded here).
void(vigil_session_options_init)(vigil_session_options* o) { vigil::api::InitOptions(o, vigil::api::kUnsizedInitBytes); }

vigil_status* vigil_session_create(const char* model_path, const vigil_session_options* options,
                                   vigil_session** session) {
  return Guarded([&]() -> vigil::Status {
    if (!session) return NullArgument("vigil_session_create", "session");
    *session = nullptr;
    if (!model_path) return NullArgument("vigil_session_create", "model_path");
    return vigil::api::Create(vigil::api::ReadModelFile(model_path), false, options, session);
  });
}

vigil_status* vigil_session_create_from_memory(const void* data, size_t size, const vigil_session_options* options,
                                               vigil_session** session) {
  return Guarded([&]() -> vigil::Status {
    if (!session) return NullArgument("vigil_session_create_from_memory", "session");
    *session = nullptr;
    return vigil::api::Create(vigil::api::ReadModelBytes(data, size), true, options, session);
  });
}

void vigil_session_release(vigil_session* session) { delete session; }

vigil_status* vigil_model_describe_json(const char* model_path, int with_shapes, char** json) {
  return Guarded([&]() -> vigil::Status {
    if (!json) return NullArgument("vigil_model_describe_json", "json");
    *json = nullptr;
    if (!model_path) return NullArgument("vigil_model_describe_json", "model_path");
    VIGIL_ASSIGN_OR_RETURN(vigil::ir::Model model, vigil::api::ReadModelFile(model_path));
    VIGIL_ASSIGN_OR_RETURN(nlohmann::json j, vigil::api::DescribeModel(model, with_shapes != 0));
    *json = vigil::api::CopyString(vigil::api::Dump(j));
    return vigil::Status::Ok();
  });
}

size_t vigil_session_input_count(const vigil_session* s) { return s ? s->inputs.size() : 0; }
size_t vigil_session_output_count(const vigil_session* s) { return s ? s->outputs.size() : 0; }

static vigil_status* FillInfo(const std::vector<vigil_session::IoInfo>& list, size_t index, vigil_io_info* info,
                              const char* call) {
  return Guarded([&]() -> vigil::Status {
    if (!info) return NullArgument(call, "info");
    if (index >= list.size()) {
      return vigil::InvalidInputError("{}: index {} is out of range; there are {}", call, index, list.size());
    }
    const vigil_session::IoInfo& i = list[index];
    *info = vigil_io_info{i.name.c_str(), i.dtype, i.rank, i.dims.data(), i.dim_name_ptrs.data()};
    return vigil::Status::Ok();
  });
}

vigil_status* vigil_session_input_info(const vigil_session* s, size_t index, vigil_io_info* info) {
  if (!s) return vigil::api::ToCStatus(NullArgument("vigil_session_input_info", "session"));
  return FillInfo(s->inputs, index, info, "vigil_session_input_info");
}

vigil_status* vigil_session_output_info(const vigil_session* s, size_t index, vigil_io_info* info) {
  if (!s) return vigil::api::ToCStatus(NullArgument("vigil_session_output_info", "session"));
  return FillInfo(s->outputs, index, info, "vigil_session_output_info");
}

const char* vigil_session_backends(const vigil_session* s) { return s ? s->backends.c_str() : ""; }

const char* vigil_session_notes_json(const vigil_session* s) {
  if (!s) return "{}";
  std::call_once(s->notes_once, [s] {
    try {
      s->notes_json = s->assembled ? vigil::api::Dump(vigil::api::SessionNotesJson(*s->assembled))
                                   : vigil::api::Dump(nlohmann::json{{"isolated", true}});
    } catch (...) {
      s->notes_json = "{}";
    }
  });
  return s->notes_json.c_str();
}

const char* vigil_session_describe_json(const vigil_session* s) {
  if (!s) return "{}";
  std::call_once(s->describe_once, [s] {
    try {
      s->describe_json = s->assembled ? vigil::api::Dump(vigil::api::DescribeSession(*s->assembled))
                                      : vigil::api::Dump(nlohmann::json{{"isolated", true}, {"backends", s->backends}});
    } catch (...) {
      s->describe_json = "{}";
    }
  });
  return s->describe_json.c_str();
}

vigil_status* vigil_session_check(const vigil_session* s, const vigil_tensor* inputs, size_t count,
                                  char** bound_dims_json) {
  return Guarded([&]() -> vigil::Status {
    if (bound_dims_json) *bound_dims_json = nullptr;
    if (!s) return NullArgument("vigil_session_check", "session");
    VIGIL_ASSIGN_OR_RETURN(auto bindings, vigil::api::ToBindings(inputs, count, "vigil_session_check"));
    VIGIL_ASSIGN_OR_RETURN(auto dims, s->isolated ? vigil::runtime::ValidateInputs(s->isolated->inputs, bindings)
                                                   : s->session().Check(bindings));
    if (bound_dims_json) *bound_dims_json = vigil::api::CopyString(vigil::api::Dump(nlohmann::json(dims)));
    return vigil::Status::Ok();
  });
}

vigil_status* vigil_session_plan_json(const vigil_session* s, const vigil_tensor* inputs, size_t count, char** json) {
  return Guarded([&]() -> vigil::Status {
    if (!s) return NullArgument("vigil_session_plan_json", "session");
    if (!json) return NullArgument("vigil_session_plan_json", "json");
    *json = nullptr;
    VIGIL_ASSIGN_OR_RETURN(auto bindings, vigil::api::ToBindings(inputs, count, "vigil_session_plan_json"));
    VIGIL_ASSIGN_OR_RETURN(const vigil::runtime::Session* in_process, s->InProcess("vigil_session_plan_json"));
    VIGIL_ASSIGN_OR_RETURN(vigil::runtime::MemoryPlan plan, in_process->Plan(bindings));
    nlohmann::json j = {{"arena_bytes", plan.arena_bytes},
                        {"peak_live_bytes", plan.peak_live_bytes},
                        {"device_arena_bytes", plan.device_arena_bytes},
                        {"device_peak_live_bytes", plan.device_peak_live_bytes},
                        {"body_arena_bytes", plan.bodies.host_bytes},
                        {"body_device_arena_bytes", plan.bodies.device_bytes},
                        {"unplanned_bodies", plan.bodies.unplanned}};
    *json = vigil::api::CopyString(vigil::api::Dump(j));
    return vigil::Status::Ok();
  });
}

vigil_status* vigil_session_run(const vigil_session* s, const vigil_tensor* inputs, size_t input_count,
                                const char* const* output_names, size_t output_count, vigil_value** outputs) {
  return Guarded([&]() -> vigil::Status {
    if (!s) return NullArgument("vigil_session_run", "session");
    if (output_count > 0 && !outputs) return NullArgument("vigil_session_run", "outputs");
    for (size_t i = 0; i < output_count; ++i) outputs[i] = nullptr;
    VIGIL_ASSIGN_OR_RETURN(auto bindings, vigil::api::ToBindings(inputs, input_count, "vigil_session_run"));
    if (s->isolated) {
      VIGIL_ASSIGN_OR_RETURN(auto all, vigil::api::RunIsolatedSession(*s->isolated, std::move(bindings)));
      return vigil::api::SelectOutputs(s, std::move(all), output_names, output_count, outputs);
    }
    vigil::runtime::RunOptions run;
    run.device_id = s->device_id;
    VIGIL_ASSIGN_OR_RETURN(auto all, s->session().Run(std::move(bindings), run));
    return vigil::api::SelectOutputs(s, std::move(all), output_names, output_count, outputs);
  });
}

vigil_status* vigil_session_profile(const vigil_session* s, const vigil_tensor* inputs, size_t count, int runs,
                                    char** json) {
  return Guarded([&]() -> vigil::Status {
    if (!s) return NullArgument("vigil_session_profile", "session");
    if (!json) return NullArgument("vigil_session_profile", "json");
    *json = nullptr;
    if (runs < 1) return vigil::InvalidInputError("vigil_session_profile: runs is {}; give at least 1", runs);
    VIGIL_ASSIGN_OR_RETURN(auto bindings, vigil::api::ToBindings(inputs, count, "vigil_session_profile"));
    VIGIL_ASSIGN_OR_RETURN(const vigil::runtime::Session* in_process, s->InProcess("vigil_session_profile"));
    VIGIL_RETURN_IF_ERROR(in_process->Check(bindings).status());
    VIGIL_ASSIGN_OR_RETURN(nlohmann::json j, vigil::api::ProfileRuns(*in_process, bindings, runs));
    *json = vigil::api::CopyString(vigil::api::Dump(j));
    return vigil::Status::Ok();
  });
}

vigil_status* vigil_session_allocate(const vigil_session* s, vigil_dtype dtype, const int64_t* shape, size_t rank,
                                     vigil_memory memory, vigil_value** value) {
  return Guarded([&]() -> vigil::Status {
    if (!value) return NullArgument("vigil_session_allocate", "value");
    *value = nullptr;
    if (!s) return NullArgument("vigil_session_allocate", "session");
    vigil_tensor desc{"", dtype, shape, rank, nullptr, 0, memory, s->device_id, nullptr};
    VIGIL_ASSIGN_OR_RETURN(vigil::runtime::InputBinding b, vigil::api::ToBinding(desc, "vigil_session_allocate"));
    vigil::Result<vigil::runtime::Tensor> t = vigil::runtime::Tensor::Allocate(b.dtype, b.shape);
    if (s->assembled) {
      t = memory == VIGIL_MEMORY_CUDA ? s->session().AllocateDeviceBuffer(b.dtype, b.shape)
                                      : s->session().AllocateHostBuffer(b.dtype, b.shape);
    } else if (memory == VIGIL_MEMORY_CUDA) {
      t = s->InProcess("vigil_session_allocate (device memory)").status();
    }
    if (!t.ok()) return std::move(t).TakeStatus();
    *value = vigil::api::NewValue("", std::move(t).value(), s->assembled, s->device_id);
    return vigil::Status::Ok();
  });
}

vigil_status* vigil_session_copy(const vigil_session* s, const vigil_tensor* src, const vigil_tensor* dst) {
  return Guarded([&]() -> vigil::Status {
    if (!s) return NullArgument("vigil_session_copy", "session");
    if (!src || !dst) return NullArgument("vigil_session_copy", src ? "dst" : "src");
    VIGIL_ASSIGN_OR_RETURN(auto from, vigil::api::ToTensorView(*src, "vigil_session_copy"));
    VIGIL_ASSIGN_OR_RETURN(auto to, vigil::api::ToTensorView(*dst, "vigil_session_copy"));
    if (from.byte_size() != to.byte_size()) {
      return vigil::InvalidInputError("vigil_session_copy: the source has {} bytes, the destination {}",
                                      from.byte_size(), to.byte_size());
    }
    if (s->isolated) {
      if (!from.on_host() || !to.on_host()) return s->InProcess("vigil_session_copy (device memory)").status();
      std::memcpy(to.raw_data(), from.raw_data(), from.byte_size());
      return vigil::Status::Ok();
    }
    return s->session().CopyTensor(from, to);
  });
}

}  // extern "C"
