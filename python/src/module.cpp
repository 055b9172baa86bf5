// vigil._vigil: sessions, io_bindings, errors and the doctor, over vigil.h.
// The onnxruntime-style API (InferenceSession, SessionOptions, IOBinding,
// providers) is Python, in python/vigil/; this layer stays thin.
#include <map>
#include <optional>

#include "vigil_python.h"

namespace vigil_python {

[[noreturn]] void RaiseStatus(vigil_status* status) {
  const int code = static_cast<int>(vigil_status_code(status));
  const std::string code_name = vigil_status_code_name(status);
  const std::string summary = vigil_status_summary(status);
  const std::string headline = vigil_status_headline(status);
  const std::string text = vigil_status_text(status);
  const std::string json = vigil_status_json(status);
  vigil_status_release(status);
  nb::object exc;
  try {
    exc = nb::module_::import_("vigil._errors").attr("_from_status")(code, code_name, headline, summary, text, json);
  } catch (nb::python_error&) {
    // The extension used without its package: still a readable error.
    exc = nb::borrow(PyExc_RuntimeError)(text);
  }
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
  throw nb::python_error();
}

namespace {

std::string TakeString(char* text) {
  std::string s = text ? text : "";
  vigil_string_release(text);
  return s;
}

// vigil_session_options from a dict keyed by its field names; the strings
// live as long as this object.
struct OptionsArg {
  vigil_session_options c{};
  std::vector<vigil_backend> backends;
  std::map<std::string, std::string> strings;

  const char* Keep(const std::string& key, nb::handle value) {
    if (value.is_none()) return nullptr;
    return (strings[key] = nb::cast<std::string>(value)).c_str();
  }

  explicit OptionsArg(nb::dict options) {
    vigil_session_options_init(&c);
    for (auto [k, v] : options) {
      const std::string key = nb::cast<std::string>(k);
      if (key == "backends") {
        for (nb::handle b : nb::iter(v)) backends.push_back(static_cast<vigil_backend>(nb::cast<int>(b)));
        c.backends = backends.data();
        c.backend_count = backends.size();
      } else if (key == "device_id") c.device_id = nb::cast<int>(v);
      else if (key == "allow_tf32") c.allow_tf32 = nb::cast<bool>(v);
      else if (key == "deterministic") c.deterministic = nb::cast<bool>(v);
      else if (key == "gpu_mem_limit") c.gpu_mem_limit = nb::cast<uint64_t>(v);
      else if (key == "layout") c.layout = static_cast<vigil_layout>(nb::cast<int>(v));
      else if (key == "cuda_graphs") c.cuda_graphs = nb::cast<bool>(v);
      else if (key == "cudnn_log_file") c.cudnn_log_file = Keep(key, v);
      else if (key == "tune") c.tune = nb::cast<bool>(v);
      else if (key == "tuning_cache_file") c.tuning_cache_file = Keep(key, v);
      else if (key == "constant_folding") c.constant_folding = nb::cast<bool>(v);
      else if (key == "cuda_module_path") c.cuda_module_path = Keep(key, v);
      else if (key == "isolate") c.isolate = nb::cast<bool>(v);
      else if (key == "isolate_timeout_s") c.isolate_timeout_s = nb::cast<double>(v);
      else if (key == "intra_op_num_threads") c.intra_op_num_threads = nb::cast<int>(v);
      else if (key == "enable_profiling") c.enable_profiling = nb::cast<bool>(v);
      else if (key == "run_as_float16") c.run_as_float16 = nb::cast<bool>(v);
      else if (key == "allow_tf32x3") c.allow_tf32x3 = nb::cast<bool>(v);
      else if (key == "measure_first_run") c.measure_first_run = nb::cast<bool>(v);
      else if (key == "tf32x3_convolutions") c.tf32x3_convolutions = nb::cast<bool>(v);
      else throw nb::key_error(("unknown vigil_session_options field '" + key + "'").c_str());
    }
  }
};

// `tensor` as ToTensor reads it; `source` (if given) names where it came
// from in vigil's messages ("torch.Tensor" for a DLPack capsule of one).
TensorArg ToNamedTensor(const std::string& name, nb::handle tensor, const std::optional<std::string>& source) {
  TensorArg t = ToTensor(name, tensor);
  if (source) t.source = *source;
  return t;
}

// Inputs given as a list of (name, tensor[, source]) tuples.
struct InputsArg {
  std::vector<TensorArg> args;
  std::vector<vigil_tensor> c;

  explicit InputsArg(nb::handle inputs) {
    for (nb::handle item : nb::iter(inputs)) {
      nb::tuple entry = nb::cast<nb::tuple>(item);
      if (entry.size() != 2 && entry.size() != 3) throw nb::type_error("inputs are (name, tensor[, source]) tuples");
      std::optional<std::string> source;
      if (entry.size() == 3 && !entry[2].is_none()) source = nb::cast<std::string>(entry[2]);
      args.push_back(ToNamedTensor(nb::cast<std::string>(entry[0]), entry[1], source));
    }
    for (const TensorArg& a : args) c.push_back(a.c());
  }
};

nb::list IoInfos(const vigil_session* s, size_t count,
                 vigil_status* (*info_fn)(const vigil_session*, size_t, vigil_io_info*)) {
  nb::list list;
  for (size_t i = 0; i < count; ++i) {
    vigil_io_info info{};
    Check(info_fn(s, i, &info));
    nb::object dims = nb::none(), names = nb::none();
    if (info.rank != static_cast<size_t>(-1)) {
      nb::list d, n;
      for (size_t k = 0; k < info.rank; ++k) {
        d.append(info.dims[k]);
        n.append(info.dim_names[k]);
      }
      dims = d;
      names = n;
    }
    list.append(nb::make_tuple(std::string(info.name), static_cast<int>(info.dtype), dims, names));
  }
  return list;
}

class Session {
 public:
  Session(nb::object model, nb::dict options) {
    OptionsArg o(options);
    vigil_session* s = nullptr;
    vigil_status* status = nullptr;
    if (nb::isinstance<nb::bytes>(model)) {
      nb::bytes bytes = nb::borrow<nb::bytes>(model);
      nb::gil_scoped_release unlocked;
      status = vigil_session_create_from_memory(bytes.c_str(), bytes.size(), &o.c, &s);
    } else {
      const std::string path = nb::cast<std::string>(model);
      nb::gil_scoped_release unlocked;
      status = vigil_session_create(path.c_str(), &o.c, &s);
    }
    Check(status);
    handle_ = std::make_shared<SessionHandle>(s);
  }

  const vigil_session* get() const { return handle_->session; }
  const std::shared_ptr<SessionHandle>& handle() const { return handle_; }

  nb::list Inputs() const { return IoInfos(get(), vigil_session_input_count(get()), vigil_session_input_info); }
  nb::list Outputs() const { return IoInfos(get(), vigil_session_output_count(get()), vigil_session_output_info); }

  nb::list Run(nb::handle inputs, std::optional<std::vector<std::string>> output_names) const {
    InputsArg in(inputs);
    std::vector<const char*> names;
    if (output_names) {
      for (const std::string& n : *output_names) names.push_back(n.c_str());
    }
    std::vector<vigil_value*> out(output_names ? names.size() : vigil_session_output_count(get()), nullptr);
    vigil_status* status = nullptr;
    {
      nb::gil_scoped_release unlocked;
      status = vigil_session_run(get(), in.c.data(), in.c.size(), output_names ? names.data() : nullptr, out.size(),
                                 out.data());
    }
    Check(status);
    nb::list result;
    for (size_t i = 0; i < out.size(); ++i) {
      vigil_value* v = out[i];
      out[i] = nullptr;
      try {
        result.append(HostValueToNumpy(v));
      } catch (...) {
        for (vigil_value* rest : out) vigil_value_release(rest);
        throw;
      }
    }
    return result;
  }

  std::string CheckInputs(nb::handle inputs) const {
    InputsArg in(inputs);
    char* dims = nullptr;
    vigil_status* status = nullptr;
    {
      nb::gil_scoped_release unlocked;
      status = vigil_session_check(get(), in.c.data(), in.c.size(), &dims);
    }
    Check(status);
    return TakeString(dims);
  }

  std::string PlanJson(nb::handle inputs) const {
    InputsArg in(inputs);
    char* json = nullptr;
    vigil_status* status = nullptr;
    {
      nb::gil_scoped_release unlocked;
      status = vigil_session_plan_json(get(), in.c.data(), in.c.size(), &json);
    }
    Check(status);
    return TakeString(json);
  }

  std::string ProfileJson(nb::handle inputs, int runs) const {
    InputsArg in(inputs);
    char* json = nullptr;
    vigil_status* status = nullptr;
    {
      nb::gil_scoped_release unlocked;
      status = vigil_session_profile(get(), in.c.data(), in.c.size(), runs, &json);
    }
    Check(status);
    return TakeString(json);
  }

 private:
  std::shared_ptr<SessionHandle> handle_;
};

// vigil_io_binding plus what it binds: the callers' tensors stay referenced
// (their memory valid) while bound, and clearing only the inputs or only the
// outputs (onnxruntime's clear_binding_inputs/outputs) rebinds the others.
class IoBinding {
 public:
  explicit IoBinding(const Session& session) : session_(session.handle()) {
    Check(vigil_io_binding_create(session_->session, &binding_));
  }
  ~IoBinding() { vigil_io_binding_release(binding_); }
  IoBinding(const IoBinding&) = delete;
  IoBinding& operator=(const IoBinding&) = delete;

  void BindInput(const std::string& name, nb::handle tensor, const std::optional<std::string>& source) {
    TensorArg t = ToNamedTensor(name, tensor, source);
    vigil_tensor c = t.c();
    Check(vigil_io_binding_bind_input(binding_, &c));
    for (TensorArg& in : inputs_) {
      if (in.name == name) {
        in = std::move(t);
        return;
      }
    }
    inputs_.push_back(std::move(t));
  }
  void BindOutput(const std::string& name, nb::handle tensor, const std::optional<std::string>& source) {
    TensorArg t = ToNamedTensor(name, tensor, source);
    vigil_tensor c = t.c();
    Check(vigil_io_binding_bind_output(binding_, &c));
    const vigil_memory memory = t.memory;
    Slot(name) = Output{name, std::move(t), memory};
  }
  void BindOutputTo(const std::string& name, int memory) {
    Check(vigil_io_binding_bind_output_to(binding_, name.c_str(), static_cast<vigil_memory>(memory)));
    Slot(name) = Output{name, std::nullopt, static_cast<vigil_memory>(memory)};
  }
  void Clear() {
    vigil_io_binding_clear(binding_);
    inputs_.clear();
    outputs_.clear();
  }
  void ClearInputs() {
    vigil_io_binding_clear(binding_);
    inputs_.clear();
    RebindOutputs();
  }
  void ClearOutputs() {
    vigil_io_binding_clear(binding_);
    outputs_.clear();
    for (const TensorArg& in : inputs_) {
      vigil_tensor c = in.c();
      Check(vigil_io_binding_bind_input(binding_, &c));
    }
  }
  void Run(const Session& session, uintptr_t stream) {
    vigil_status* status = nullptr;
    {
      nb::gil_scoped_release unlocked;
      status = vigil_session_run_with_binding(session.get(), binding_, reinterpret_cast<void*>(stream));
    }
    Check(status);
  }
  std::vector<Value> Outputs() const {
    std::vector<Value> values;
    for (size_t i = 0; i < vigil_io_binding_output_count(binding_); ++i) {
      vigil_value* v = nullptr;
      Check(vigil_io_binding_get_output(binding_, i, &v));
      values.emplace_back(v, session_);
    }
    return values;
  }
  std::vector<std::string> InputNames() const {
    std::vector<std::string> names;
    for (const TensorArg& in : inputs_) names.push_back(in.name);
    return names;
  }
  std::vector<std::string> OutputNames() const {
    std::vector<std::string> names;
    for (const Output& o : outputs_) names.push_back(o.name);
    return names;
  }

 private:
  struct Output {
    std::string name;
    std::optional<TensorArg> buffer;  // a caller's buffer; none: vigil allocates
    vigil_memory memory = VIGIL_MEMORY_HOST;
  };

  Output& Slot(const std::string& name) {
    for (Output& o : outputs_) {
      if (o.name == name) return o;
    }
    outputs_.push_back(Output{name, std::nullopt, VIGIL_MEMORY_HOST});
    return outputs_.back();
  }
  void RebindOutputs() {
    for (const Output& o : outputs_) {
      if (o.buffer) {
        vigil_tensor c = o.buffer->c();
        Check(vigil_io_binding_bind_output(binding_, &c));
      } else {
        Check(vigil_io_binding_bind_output_to(binding_, o.name.c_str(), o.memory));
      }
    }
  }

  std::shared_ptr<SessionHandle> session_;
  vigil_io_binding* binding_ = nullptr;
  std::vector<TensorArg> inputs_;
  std::vector<Output> outputs_;
};

std::string DoctorReportJson() {
  char* json = nullptr;
  vigil_status* status = nullptr;
  {
    nb::gil_scoped_release unlocked;
    status = vigil_doctor_report_json(&json);
  }
  Check(status);
  return TakeString(json);
}

}  // namespace
}  // namespace vigil_python

NB_MODULE(_vigil, m) {
  using namespace vigil_python;
  m.doc() = "vigil's C API for Python; use the vigil package (vigil.InferenceSession) rather than this module.";

  m.def("version", [] { return std::string(vigil_version_string()); }, "libvigil's version, '0.1.0'.");
  m.def("api_version", [] { return vigil_api_version(); }, "VIGIL_API_VERSION of the loaded libvigil.so.");
  m.attr("HEADER_API_VERSION") = VIGIL_API_VERSION;
  m.def("dtype_name", [](int dtype) { return std::string(vigil_dtype_name(static_cast<vigil_dtype>(dtype))); });
  m.def("doctor_report_json", &DoctorReportJson, "The doctor's report on this machine's GPU stack, as JSON.");
  m.def(
      "tensor_info",
      [](nb::handle obj) {
        TensorArg t = ToTensor("tensor", obj);
        return nb::make_tuple(reinterpret_cast<uintptr_t>(t.data), t.byte_size, static_cast<int>(t.dtype), t.shape,
                              static_cast<int>(t.memory), t.device_id, t.source);
      },
      "(data_ptr, byte_size, dtype, shape, memory, device_id, source) of an array read in place. The caller keeps "
      "the object alive while the pointer is used.");

  BindTensors(m);

  nb::class_<Session>(m, "Session")
      .def(nb::init<nb::object, nb::dict>(), nb::arg("model"), nb::arg("options"),
           "model: a path (str) or the model's bytes; options: vigil_session_options fields by name.")
      .def("inputs", &Session::Inputs, "[(name, dtype, dims or None, dim_names or None)]")
      .def("outputs", &Session::Outputs)
      .def("backends", [](const Session& s) { return std::string(vigil_session_backends(s.get())); })
      .def("notes_json", [](const Session& s) { return std::string(vigil_session_notes_json(s.get())); })
      .def("describe_json", [](const Session& s) { return std::string(vigil_session_describe_json(s.get())); })
      .def("run", &Session::Run, nb::arg("inputs"), nb::arg("output_names").none(),
           "inputs: [(name, tensor)]; returns numpy arrays, owning vigil's output memory.")
      .def("check", &Session::CheckInputs, nb::arg("inputs"))
      .def("plan_json", &Session::PlanJson, nb::arg("inputs"))
      .def("profile_json", &Session::ProfileJson, nb::arg("inputs"), nb::arg("runs"));

  nb::class_<IoBinding>(m, "IoBinding")
      .def(nb::init<const Session&>(), nb::arg("session"))
      .def("bind_input", &IoBinding::BindInput, nb::arg("name"), nb::arg("tensor"), nb::arg("source") = nb::none())
      .def("bind_output", &IoBinding::BindOutput, nb::arg("name"), nb::arg("tensor"), nb::arg("source") = nb::none())
      .def("bind_output_to", &IoBinding::BindOutputTo, nb::arg("name"), nb::arg("memory"))
      .def("clear", &IoBinding::Clear)
      .def("clear_inputs", &IoBinding::ClearInputs)
      .def("clear_outputs", &IoBinding::ClearOutputs)
      .def("input_names", &IoBinding::InputNames)
      .def("output_names", &IoBinding::OutputNames)
      .def("run", &IoBinding::Run, nb::arg("session"), nb::arg("cuda_stream"))
      .def("outputs", &IoBinding::Outputs);
}
