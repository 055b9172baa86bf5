// vigil's C++ interface: header-only RAII classes over the C API of vigil.h.
// Failures throw vigil::Error, which carries the whole diagnosis; what() is
// the diagnosis as text, its first line the headline (the cause and its fix).
//
//   vigil::SessionOptions options;
//   options.backends = {vigil::Backend::kCuda, vigil::Backend::kCpu};
//   vigil::Session session("model.onnx", options);
//   std::vector<float> image(1 * 3 * 224 * 224);
//   auto outputs = session.Run({vigil::TensorRef::Of("input", image.data(), image.size(), {1, 3, 224, 224})});
//   const float* scores = outputs[0].Data<float>();
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "vigil/vigil.h"

namespace vigil {

enum class ErrorCode : int {
  kOk = VIGIL_OK,
  kInvalidModel = VIGIL_ERROR_INVALID_MODEL,
  kInvalidInput = VIGIL_ERROR_INVALID_INPUT,
  kUnsupported = VIGIL_ERROR_UNSUPPORTED,
  kOutOfMemory = VIGIL_ERROR_OUT_OF_MEMORY,
  kEnvironment = VIGIL_ERROR_ENVIRONMENT,
  kDeviceFault = VIGIL_ERROR_DEVICE_FAULT,
  kCrashed = VIGIL_ERROR_CRASHED,
  kInternal = VIGIL_ERROR_INTERNAL,
};

// A failure, with everything vigil knows about it.
class Error : public std::runtime_error {
 public:
  struct Fact {
    std::string name, value;
  };
  struct Cause {
    std::string what, evidence;
  };

  // Takes ownership of a non-NULL status.
  explicit Error(vigil_status* status)
      : std::runtime_error(vigil_status_text(status)),
        code_(static_cast<ErrorCode>(vigil_status_code(status))),
        code_name_(vigil_status_code_name(status)),
        headline_(vigil_status_headline(status)),
        summary_(vigil_status_summary(status)),
        json_(vigil_status_json(status)) {
    for (size_t i = 0; i < vigil_status_fact_count(status); ++i) {
      facts_.push_back({vigil_status_fact_name(status, i), vigil_status_fact_value(status, i)});
    }
    for (size_t i = 0; i < vigil_status_cause_count(status); ++i) {
      causes_.push_back({vigil_status_cause(status, i), vigil_status_cause_evidence(status, i)});
    }
    for (size_t i = 0; i < vigil_status_fix_count(status); ++i) fixes_.push_back(vigil_status_fix(status, i));
    vigil_status_release(status);
  }

  ErrorCode code() const { return code_; }
  const std::string& code_name() const { return code_name_; }  // "InvalidInput"
  // The most likely cause and its fix: the first line of text().
  const std::string& headline() const { return headline_; }
  // What was observed (the symptom).
  const std::string& summary() const { return summary_; }
  const std::vector<Fact>& facts() const { return facts_; }
  const std::vector<Cause>& causes() const { return causes_; }
  const std::vector<std::string>& fixes() const { return fixes_; }
  const std::string& json() const { return json_; }
  std::string text() const { return what(); }

 private:
  ErrorCode code_;
  std::string code_name_, headline_, summary_, json_;
  std::vector<Fact> facts_;
  std::vector<Cause> causes_;
  std::vector<std::string> fixes_;
};

namespace detail {
inline void Check(vigil_status* status) {
  if (status) throw Error(status);
}
// A string vigil allocated, as std::string.
inline std::string TakeString(char* text) {
  std::string s = text ? text : "";
  vigil_string_release(text);
  return s;
}
}  // namespace detail

enum class DType : int {
  kFloat32 = VIGIL_DTYPE_FLOAT32,
  kUint8 = VIGIL_DTYPE_UINT8,
  kInt8 = VIGIL_DTYPE_INT8,
  kUint16 = VIGIL_DTYPE_UINT16,
  kInt16 = VIGIL_DTYPE_INT16,
  kInt32 = VIGIL_DTYPE_INT32,
  kInt64 = VIGIL_DTYPE_INT64,
  kBool = VIGIL_DTYPE_BOOL,
  kFloat16 = VIGIL_DTYPE_FLOAT16,
  kFloat64 = VIGIL_DTYPE_FLOAT64,
  kUint32 = VIGIL_DTYPE_UINT32,
  kUint64 = VIGIL_DTYPE_UINT64,
  kBfloat16 = VIGIL_DTYPE_BFLOAT16,
};

inline const char* DTypeName(DType t) { return vigil_dtype_name(static_cast<vigil_dtype>(t)); }

// The dtype of a C++ element type (uint16_t is taken as float16's storage).
template <typename T>
constexpr DType DTypeOf();
template <>
constexpr DType DTypeOf<float>() { return DType::kFloat32; }
template <>
constexpr DType DTypeOf<double>() { return DType::kFloat64; }
template <>
constexpr DType DTypeOf<int8_t>() { return DType::kInt8; }
template <>
constexpr DType DTypeOf<uint8_t>() { return DType::kUint8; }
template <>
constexpr DType DTypeOf<int16_t>() { return DType::kInt16; }
template <>
constexpr DType DTypeOf<int32_t>() { return DType::kInt32; }
template <>
constexpr DType DTypeOf<int64_t>() { return DType::kInt64; }
template <>
constexpr DType DTypeOf<uint32_t>() { return DType::kUint32; }
template <>
constexpr DType DTypeOf<uint64_t>() { return DType::kUint64; }
template <>
constexpr DType DTypeOf<bool>() { return DType::kBool; }

enum class Memory : int { kHost = VIGIL_MEMORY_HOST, kCuda = VIGIL_MEMORY_CUDA };

// A caller's buffer, described: name, dtype, shape, pointer and byte size.
// vigil checks all of it against the model before anything runs.
struct TensorRef {
  std::string name;  // "" binds by position
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  void* data = nullptr;
  size_t byte_size = 0;
  Memory memory = Memory::kHost;
  int device_id = 0;
  std::string source;  // for messages ("cat.npy")

  // `count` elements of T at `data` (byte size = count * sizeof(T)), like
  // Ort::Value::CreateTensor(info, data, count, shape, rank).
  template <typename T>
  static TensorRef Of(std::string name, const T* data, size_t count, std::vector<int64_t> shape) {
    TensorRef t;
    t.name = std::move(name);
    t.dtype = DTypeOf<T>();
    t.shape = std::move(shape);
    t.data = const_cast<T*>(data);
    t.byte_size = count * sizeof(T);
    return t;
  }
  // Raw bytes of the given dtype (float16, bfloat16, device memory...).
  static TensorRef Bytes(std::string name, DType dtype, std::vector<int64_t> shape, void* data, size_t byte_size,
                         Memory memory = Memory::kHost, int device_id = 0) {
    TensorRef t;
    t.name = std::move(name);
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.data = data;
    t.byte_size = byte_size;
    t.memory = memory;
    t.device_id = device_id;
    return t;
  }

  // The C view; valid while this TensorRef lives.
  vigil_tensor c() const {
    return vigil_tensor{name.c_str(), static_cast<vigil_dtype>(dtype), shape.data(), shape.size(), data,
                        byte_size,    static_cast<vigil_memory>(memory), device_id,  source.c_str()};
  }
};

// A tensor vigil owns: a run's output, a file read, a buffer it allocated.
class Value {
 public:
  Value() = default;
  explicit Value(vigil_value* v) : v_(v, vigil_value_release) {}

  std::string Name() const { return vigil_value_name(v_.get()); }
  DType GetDType() const { return static_cast<DType>(vigil_value_dtype(v_.get())); }
  std::vector<int64_t> Shape() const {
    const int64_t* s = vigil_value_shape(v_.get());
    return std::vector<int64_t>(s, s + vigil_value_rank(v_.get()));
  }
  size_t ByteSize() const { return vigil_value_byte_size(v_.get()); }
  Memory GetMemory() const { return static_cast<Memory>(vigil_value_memory(v_.get())); }
  const void* RawData() const { return vigil_value_data(v_.get()); }
  void* MutableRawData() { return vigil_value_mutable_data(v_.get()); }
  template <typename T>
  const T* Data() const {
    return static_cast<const T*>(RawData());
  }
  size_t ElementCount() const {
    const int64_t* s = vigil_value_shape(v_.get());
    size_t n = 1;
    for (size_t i = 0, rank = vigil_value_rank(v_.get()); i < rank; ++i) n *= static_cast<size_t>(s[i]);
    return n;
  }
  // This value as an input (named `name`, or its own name).
  TensorRef AsInput(std::string name = {}) const {
    vigil_tensor t{};
    vigil_value_as_tensor(v_.get(), &t);
    TensorRef r = TensorRef::Bytes(name.empty() ? t.name : std::move(name), static_cast<DType>(t.dtype),
                                   std::vector<int64_t>(t.shape, t.shape + t.rank), t.data, t.byte_size,
                                   static_cast<Memory>(t.memory), t.device_id);
    return r;
  }
  vigil_value* get() const { return v_.get(); }
  explicit operator bool() const { return v_ != nullptr; }

 private:
  std::shared_ptr<vigil_value> v_;
};

// Reads a .npy or TensorProto .pb file into host memory.
inline Value ReadTensorFile(const std::string& path) {
  vigil_value* v = nullptr;
  detail::Check(vigil_tensor_file_read(path.c_str(), &v));
  return Value(v);
}
inline void WriteNpy(const std::string& path, const TensorRef& tensor) {
  vigil_tensor t = tensor.c();
  detail::Check(vigil_tensor_file_write_npy(path.c_str(), &t));
}

enum class Backend : int { kCpu = VIGIL_BACKEND_CPU, kCuda = VIGIL_BACKEND_CUDA };
enum class Layout : int { kAuto = VIGIL_LAYOUT_AUTO, kNchw = VIGIL_LAYOUT_NCHW };

// Every option of a session (see vigil_session_options in vigil.h).
struct SessionOptions {
  std::vector<Backend> backends;  // empty: {kCpu}; {kCuda} alone: no CPU fallback
  int device_id = 0;
  bool allow_tf32 = false;
  bool deterministic = false;
  uint64_t gpu_mem_limit = 0;
  Layout layout = Layout::kAuto;
  bool cuda_graphs = false;
  std::string cudnn_log_file;
  bool tune = false;
  std::string tuning_cache_file;
  bool constant_folding = true;
  std::string cuda_module_path;
  bool isolate = false;
  double isolate_timeout_s = 0;
  int intra_op_num_threads = 0;
  bool enable_profiling = false;
  bool run_as_float16 = false;  // float32 model computed in float16 (vigil.h)
  bool allow_tf32x3 = true;     // large float32 products as 3xTF32 without TF32 (vigil.h)
  bool measure_first_run = true;  // without tune, measure the slow-pick operations on first run (vigil.h)
  bool tf32x3_convolutions = false;  // without allow_tf32, float32 convolutions as 3xTF32 (vigil.h)
};

// A model input or output as the model declares it.
struct IoInfo {
  std::string name;
  DType dtype = DType::kFloat32;
  bool rank_known = false;
  std::vector<int64_t> dims;          // -1 where symbolic or unknown
  std::vector<std::string> dim_names; // symbolic names ("" for fixed dims)
};

// SessionOptions as the C API's vigil_session_options, for code that mixes
// the two. get() points into this object (the backend list, the strings of
// `options`), so it lives as long as both; it cannot be copied.
class CSessionOptions {
 public:
  explicit CSessionOptions(const SessionOptions& o) : strings_(o) {
    vigil_session_options_init(&c_);
    for (Backend b : o.backends) backends_.push_back(static_cast<vigil_backend>(b));
    c_.backends = backends_.data();
    c_.backend_count = backends_.size();
    c_.device_id = o.device_id;
    c_.allow_tf32 = o.allow_tf32;
    c_.deterministic = o.deterministic;
    c_.gpu_mem_limit = o.gpu_mem_limit;
    c_.layout = static_cast<vigil_layout>(o.layout);
    c_.cuda_graphs = o.cuda_graphs;
    c_.cudnn_log_file = CString(strings_.cudnn_log_file);
    c_.tune = o.tune;
    c_.tuning_cache_file = CString(strings_.tuning_cache_file);
    c_.constant_folding = o.constant_folding;
    c_.cuda_module_path = CString(strings_.cuda_module_path);
    c_.isolate = o.isolate;
    c_.isolate_timeout_s = o.isolate_timeout_s;
    c_.intra_op_num_threads = o.intra_op_num_threads;
    c_.enable_profiling = o.enable_profiling;
    c_.run_as_float16 = o.run_as_float16;
    c_.allow_tf32x3 = o.allow_tf32x3;
    c_.measure_first_run = o.measure_first_run;
    c_.tf32x3_convolutions = o.tf32x3_convolutions;
  }
  CSessionOptions(const CSessionOptions&) = delete;
  CSessionOptions& operator=(const CSessionOptions&) = delete;
  const vigil_session_options* get() const { return &c_; }

 private:
  static const char* CString(const std::string& s) { return s.empty() ? nullptr : s.c_str(); }
  SessionOptions strings_;  // a copy: the C struct's strings point into it
  std::vector<vigil_backend> backends_;
  vigil_session_options c_;
};

class IoBinding;

class Session {
 public:
  Session(const std::string& model_path, const SessionOptions& options = {}) {
    CSessionOptions o(options);
    vigil_session* s = nullptr;
    detail::Check(vigil_session_create(model_path.c_str(), o.get(), &s));
    s_.reset(s, vigil_session_release);
  }
  Session(const void* model_data, size_t model_size, const SessionOptions& options = {}) {
    CSessionOptions o(options);
    vigil_session* s = nullptr;
    detail::Check(vigil_session_create_from_memory(model_data, model_size, o.get(), &s));
    s_.reset(s, vigil_session_release);
  }

  std::vector<IoInfo> Inputs() const { return Infos(vigil_session_input_count(s_.get()), vigil_session_input_info); }
  std::vector<IoInfo> Outputs() const {
    return Infos(vigil_session_output_count(s_.get()), vigil_session_output_info);
  }
  // The backends nodes really run on ("cuda,cpu").
  std::string Backends() const { return vigil_session_backends(s_.get()); }
  std::string NotesJson() const { return vigil_session_notes_json(s_.get()); }
  std::string DescribeJson() const { return vigil_session_describe_json(s_.get()); }

  // Validates inputs without running; returns the bound symbolic dims as JSON.
  std::string Check(const std::vector<TensorRef>& inputs) const {
    std::vector<vigil_tensor> c = ToC(inputs);
    char* dims = nullptr;
    detail::Check(vigil_session_check(s_.get(), c.data(), c.size(), &dims));
    return detail::TakeString(dims);
  }
  std::string PlanJson(const std::vector<TensorRef>& inputs) const {
    std::vector<vigil_tensor> c = ToC(inputs);
    char* json = nullptr;
    detail::Check(vigil_session_plan_json(s_.get(), c.data(), c.size(), &json));
    return detail::TakeString(json);
  }
  std::string ProfileJson(const std::vector<TensorRef>& inputs, int runs) const {
    std::vector<vigil_tensor> c = ToC(inputs);
    char* json = nullptr;
    detail::Check(vigil_session_profile(s_.get(), c.data(), c.size(), runs, &json));
    return detail::TakeString(json);
  }

  // Runs; returns every output (host memory), in model order.
  std::vector<Value> Run(const std::vector<TensorRef>& inputs) const {
    std::vector<vigil_tensor> c = ToC(inputs);
    std::vector<vigil_value*> out(vigil_session_output_count(s_.get()), nullptr);
    detail::Check(vigil_session_run(s_.get(), c.data(), c.size(), nullptr, out.size(), out.data()));
    return Wrap(out);
  }
  // Runs; returns the named outputs.
  std::vector<Value> Run(const std::vector<TensorRef>& inputs, const std::vector<std::string>& output_names) const {
    std::vector<vigil_tensor> c = ToC(inputs);
    std::vector<const char*> names;
    for (const std::string& n : output_names) names.push_back(n.c_str());
    std::vector<vigil_value*> out(names.size(), nullptr);
    detail::Check(vigil_session_run(s_.get(), c.data(), c.size(), names.data(), names.size(), out.data()));
    return Wrap(out);
  }
  void Run(IoBinding& binding, void* cuda_stream = nullptr) const;

  // A device buffer (Memory::kCuda) or a page-locked host buffer (kHost).
  Value Allocate(DType dtype, const std::vector<int64_t>& shape, Memory memory) const {
    vigil_value* v = nullptr;
    detail::Check(vigil_session_allocate(s_.get(), static_cast<vigil_dtype>(dtype), shape.data(), shape.size(),
                                         static_cast<vigil_memory>(memory), &v));
    return Value(v);
  }
  void Copy(const TensorRef& src, const TensorRef& dst) const {
    vigil_tensor a = src.c(), b = dst.c();
    detail::Check(vigil_session_copy(s_.get(), &a, &b));
  }

  const vigil_session* get() const { return s_.get(); }

 private:

  static std::vector<vigil_tensor> ToC(const std::vector<TensorRef>& inputs) {
    std::vector<vigil_tensor> c;
    c.reserve(inputs.size());
    for (const TensorRef& t : inputs) c.push_back(t.c());
    return c;
  }
  static std::vector<Value> Wrap(const std::vector<vigil_value*>& out) {
    std::vector<Value> values;
    values.reserve(out.size());
    for (vigil_value* v : out) values.emplace_back(v);
    return values;
  }
  template <typename Fn>
  std::vector<IoInfo> Infos(size_t count, Fn fn) const {
    std::vector<IoInfo> list;
    for (size_t i = 0; i < count; ++i) {
      vigil_io_info c{};
      detail::Check(fn(s_.get(), i, &c));
      IoInfo info;
      info.name = c.name;
      info.dtype = static_cast<DType>(c.dtype);
      info.rank_known = c.rank != static_cast<size_t>(-1);
      if (info.rank_known) {
        info.dims.assign(c.dims, c.dims + c.rank);
        for (size_t d = 0; d < c.rank; ++d) info.dim_names.emplace_back(c.dim_names[d]);
      }
      list.push_back(std::move(info));
    }
    return list;
  }

  std::shared_ptr<vigil_session> s_;
};

// Inputs and outputs bound to buffers (device memory included) for
// Session::Run(IoBinding&): the ONNX Runtime IOBinding of vigil.
class IoBinding {
 public:
  explicit IoBinding(const Session& session) {
    vigil_io_binding* b = nullptr;
    detail::Check(vigil_io_binding_create(session.get(), &b));
    b_.reset(b, vigil_io_binding_release);
  }
  void BindInput(const TensorRef& t) {
    vigil_tensor c = t.c();
    detail::Check(vigil_io_binding_bind_input(b_.get(), &c));
  }
  void BindOutput(const TensorRef& t) {
    vigil_tensor c = t.c();
    detail::Check(vigil_io_binding_bind_output(b_.get(), &c));
  }
  void BindOutput(const std::string& name, Memory memory) {
    detail::Check(vigil_io_binding_bind_output_to(b_.get(), name.c_str(), static_cast<vigil_memory>(memory)));
  }
  void Clear() { vigil_io_binding_clear(b_.get()); }
  std::vector<Value> Outputs() const {
    std::vector<Value> list;
    for (size_t i = 0; i < vigil_io_binding_output_count(b_.get()); ++i) {
      vigil_value* v = nullptr;
      detail::Check(vigil_io_binding_get_output(b_.get(), i, &v));
      list.emplace_back(v);
    }
    return list;
  }
  vigil_io_binding* get() const { return b_.get(); }

 private:
  std::shared_ptr<vigil_io_binding> b_;
};

inline void Session::Run(IoBinding& binding, void* cuda_stream) const {
  detail::Check(vigil_session_run_with_binding(s_.get(), binding.get(), cuda_stream));
}

// The model described as JSON without a session (what `vigil inspect` shows).
inline std::string DescribeModelJson(const std::string& model_path, bool with_shapes = false) {
  char* json = nullptr;
  detail::Check(vigil_model_describe_json(model_path.c_str(), with_shapes ? 1 : 0, &json));
  return detail::TakeString(json);
}

// The doctor's report on this machine's GPU stack, as JSON.
inline std::string DoctorReportJson() {
  char* json = nullptr;
  detail::Check(vigil_doctor_report_json(&json));
  return detail::TakeString(json);
}

inline std::string Version() { return vigil_version_string(); }

}  // namespace vigil
