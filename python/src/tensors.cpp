// Tensors between Python and vigil: callers' arrays read in place (buffer
// protocol, DLPack, raw pointers), and vigil's values handed to numpy and to
// DLPack consumers without a copy.
#include <cstdlib>
#include <cstring>

#include "vigil_python.h"

namespace vigil_python {

namespace {

using nb::dlpack::dtype_code;

constexpr int kDlpackCpu = 1;
constexpr int kDlpackCuda = 2;
constexpr int kDlpackCudaHost = 3;     // page-locked host memory
constexpr int kDlpackCudaManaged = 13; // unified memory: device-accessible

// "numpy.ndarray", "torch.Tensor": where an input came from, for messages.
std::string TypeName(nb::handle obj) {
  nb::handle type = obj.type();
  std::string name = nb::cast<std::string>(type.attr("__qualname__"));
  std::string module = nb::hasattr(type, "__module__") ? nb::cast<std::string>(nb::str(type.attr("__module__"))) : "";
  return module.empty() || module == "builtins" ? name : module + "." + name;
}

std::vector<size_t> SizeShape(const vigil_value* v) {
  const int64_t* s = vigil_value_shape(v);
  std::vector<size_t> shape(vigil_value_rank(v));
  for (size_t i = 0; i < shape.size(); ++i) shape[i] = static_cast<size_t>(s[i]);
  return shape;
}

// numpy has no bfloat16; ml_dtypes (used by JAX, TensorFlow) adds one. Without
// it a bfloat16 output stays a uint16 array of the same bits.
nb::object ViewAsBfloat16(nb::object array) {
  try {
    nb::object ml_dtypes = nb::module_::import_("ml_dtypes");
    return array.attr("view")(ml_dtypes.attr("bfloat16"));
  } catch (nb::python_error&) {
    return array;
  }
}

bool IsCContiguous(const nb::ndarray<nb::ro>& a) {
  const int64_t* strides = a.stride_ptr();
  if (!strides) return true;
  int64_t expected = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && strides[i] != expected) return false;
    expected *= static_cast<int64_t>(a.shape(i));
  }
  return true;
}

std::string ShapeText(const nb::ndarray<nb::ro>& a) {
  std::string s = "[";
  for (size_t i = 0; i < a.ndim(); ++i) s += (i ? "," : "") + std::to_string(a.shape(i));
  return s + "]";
}

TensorArg FromRawTuple(const std::string& name, nb::tuple raw) {
  if (raw.size() < 6 || raw.size() > 7) {
    throw nb::type_error("a raw tensor is (data_ptr, byte_size, dtype, shape, memory, device_id[, source])");
  }
  TensorArg t;
  t.name = name;
  t.data = reinterpret_cast<void*>(nb::cast<uintptr_t>(raw[0]));
  t.byte_size = nb::cast<size_t>(raw[1]);
  t.dtype = static_cast<vigil_dtype>(nb::cast<int>(raw[2]));
  for (nb::handle d : nb::iter(raw[3])) t.shape.push_back(nb::cast<int64_t>(d));
  t.memory = static_cast<vigil_memory>(nb::cast<int>(raw[4]));
  t.device_id = nb::cast<int>(raw[5]);
  t.source = raw.size() == 7 ? nb::cast<std::string>(raw[6]) : "pointer";
  return t;
}

TensorArg FromValue(const std::string& name, nb::handle obj) {
  const Value& v = nb::cast<const Value&>(obj);
  vigil_tensor vt{};
  vigil_value_as_tensor(v.get(), &vt);
  TensorArg t;
  t.name = name;
  t.dtype = vt.dtype;
  t.shape.assign(vt.shape, vt.shape + vt.rank);
  t.data = vt.data;
  t.byte_size = vt.byte_size;
  t.memory = vt.memory;
  t.device_id = vt.device_id;
  t.source = "vigil.OrtValue";
  t.keep = nb::borrow(obj);
  return t;
}

TensorArg FromArray(const std::string& name, nb::handle obj) {
  nb::ndarray<nb::ro> a;
  if (!nb::try_cast(obj, a, /*convert=*/false)) {
    throw nb::type_error(("input '" + name + "': expected a numpy array, an object with __dlpack__ or "
                          "__cuda_array_interface__, or a vigil.OrtValue; got " + TypeName(obj))
                             .c_str());
  }
  if (!IsCContiguous(a)) {
    throw nb::value_error(("input '" + name + "' (" + TypeName(obj) + " of shape " + ShapeText(a) +
                           ") is not C-contiguous; vigil reads inputs in place: make it contiguous first "
                           "(np.ascontiguousarray(x), x.contiguous())")
                              .c_str());
  }
  TensorArg t;
  t.name = name;
  t.source = PyCapsule_CheckExact(obj.ptr()) ? "DLPack capsule" : TypeName(obj);
  t.dtype = DTypeFromDlpack(a.dtype());
  if (t.dtype == VIGIL_DTYPE_UNDEFINED) {
    throw nb::type_error(("input '" + name + "' has an element type (DLPack code " + std::to_string(a.dtype().code) +
                          ", " + std::to_string(a.dtype().bits) + " bits) that is no ONNX tensor type")
                             .c_str());
  }
  for (size_t i = 0; i < a.ndim(); ++i) t.shape.push_back(static_cast<int64_t>(a.shape(i)));
  t.data = const_cast<void*>(static_cast<const void*>(a.data()));
  t.byte_size = a.nbytes();
  switch (a.device_type()) {
    case kDlpackCpu:
    case kDlpackCudaHost: t.memory = VIGIL_MEMORY_HOST; break;
    case kDlpackCuda:
    case kDlpackCudaManaged:
      t.memory = VIGIL_MEMORY_CUDA;
      t.device_id = a.device_id();
      break;
    default:
      throw nb::value_error(("input '" + name + "' lives on DLPack device type " + std::to_string(a.device_type()) +
                             "; vigil takes host (CPU) and CUDA memory")
                                .c_str());
  }
  t.array = std::move(a);
  return t;
}

}  // namespace

vigil_dtype DTypeFromDlpack(nb::dlpack::dtype dt) {
  if (dt.lanes != 1) return VIGIL_DTYPE_UNDEFINED;
  switch (static_cast<dtype_code>(dt.code)) {
    case dtype_code::Int:
      switch (dt.bits) {
        case 8: return VIGIL_DTYPE_INT8;
        case 16: return VIGIL_DTYPE_INT16;
        case 32: return VIGIL_DTYPE_INT32;
        case 64: return VIGIL_DTYPE_INT64;
      }
      break;
    case dtype_code::UInt:
      switch (dt.bits) {
        case 8: return VIGIL_DTYPE_UINT8;
        case 16: return VIGIL_DTYPE_UINT16;
        case 32: return VIGIL_DTYPE_UINT32;
        case 64: return VIGIL_DTYPE_UINT64;
      }
      break;
    case dtype_code::Float:
      switch (dt.bits) {
        case 16: return VIGIL_DTYPE_FLOAT16;
        case 32: return VIGIL_DTYPE_FLOAT32;
        case 64: return VIGIL_DTYPE_FLOAT64;
      }
      break;
    case dtype_code::Bfloat:
      if (dt.bits == 16) return VIGIL_DTYPE_BFLOAT16;
      break;
    case dtype_code::Bool:
      if (dt.bits == 8) return VIGIL_DTYPE_BOOL;
      break;
    default: break;
  }
  return VIGIL_DTYPE_UNDEFINED;
}

nb::dlpack::dtype DlpackFromDType(vigil_dtype dtype, bool* ok) {
  auto make = [](dtype_code code, int bits) {
    return nb::dlpack::dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
  };
  *ok = true;
  switch (dtype) {
    case VIGIL_DTYPE_FLOAT32: return make(dtype_code::Float, 32);
    case VIGIL_DTYPE_FLOAT64: return make(dtype_code::Float, 64);
    case VIGIL_DTYPE_FLOAT16: return make(dtype_code::Float, 16);
    case VIGIL_DTYPE_BFLOAT16: return make(dtype_code::Bfloat, 16);
    case VIGIL_DTYPE_INT8: return make(dtype_code::Int, 8);
    case VIGIL_DTYPE_INT16: return make(dtype_code::Int, 16);
    case VIGIL_DTYPE_INT32: return make(dtype_code::Int, 32);
    case VIGIL_DTYPE_INT64: return make(dtype_code::Int, 64);
    case VIGIL_DTYPE_UINT8: return make(dtype_code::UInt, 8);
    case VIGIL_DTYPE_UINT16: return make(dtype_code::UInt, 16);
    case VIGIL_DTYPE_UINT32: return make(dtype_code::UInt, 32);
    case VIGIL_DTYPE_UINT64: return make(dtype_code::UInt, 64);
    case VIGIL_DTYPE_BOOL: return make(dtype_code::Bool, 8);
    default: *ok = false; return {};
  }
}

size_t DTypeSize(vigil_dtype dtype) {
  bool ok = false;
  nb::dlpack::dtype dt = DlpackFromDType(dtype, &ok);
  return ok ? dt.bits / 8 : 0;
}

TensorArg ToTensor(const std::string& name, nb::handle obj) {
  if (nb::isinstance<nb::tuple>(obj)) return FromRawTuple(name, nb::borrow<nb::tuple>(obj));
  if (nb::isinstance<Value>(obj)) return FromValue(name, obj);
  return FromArray(name, obj);
}

nb::object HostValueToNumpy(vigil_value* value) {
  std::unique_ptr<vigil_value, void (*)(vigil_value*)> owned(value, vigil_value_release);
  const vigil_dtype dtype = vigil_value_dtype(value);
  bool ok = false;
  nb::dlpack::dtype dt = DlpackFromDType(dtype == VIGIL_DTYPE_BFLOAT16 ? VIGIL_DTYPE_UINT16 : dtype, &ok);
  if (!ok) {
    throw nb::type_error(("output '" + std::string(vigil_value_name(value)) + "' has dtype " +
                          vigil_dtype_name(dtype) + ", which numpy cannot hold")
                             .c_str());
  }
  if (vigil_value_memory(value) != VIGIL_MEMORY_HOST) {
    throw nb::value_error("HostValueToNumpy: the value is in device memory");
  }
  std::vector<size_t> shape = SizeShape(value);
  static char empty_data;  // numpy wants a pointer even for zero elements
  void* data = const_cast<void*>(vigil_value_data(value));
  if (!data) data = &empty_data;
  nb::capsule owner(owned.release(), [](void* p) noexcept { vigil_value_release(static_cast<vigil_value*>(p)); });
  nb::ndarray<nb::numpy> array(data, shape.size(), shape.data(), owner, nullptr, dt, kDlpackCpu, 0);
  nb::object out = nb::cast(array);
  return dtype == VIGIL_DTYPE_BFLOAT16 ? ViewAsBfloat16(out) : out;
}

std::vector<int64_t> Value::Shape() const {
  const int64_t* s = vigil_value_shape(get());
  return std::vector<int64_t>(s, s + vigil_value_rank(get()));
}

int Value::DeviceId() const {
  vigil_tensor t{};
  vigil_value_as_tensor(get(), &t);
  return t.device_id;
}

nb::object Value::Numpy(nb::handle self) const {
  const vigil_dtype dtype = DType();
  bool ok = false;
  nb::dlpack::dtype dt = DlpackFromDType(dtype == VIGIL_DTYPE_BFLOAT16 ? VIGIL_DTYPE_UINT16 : dtype, &ok);
  if (!ok) throw nb::type_error(("output '" + Name() + "' has dtype " + vigil_dtype_name(dtype) + ", which numpy cannot hold").c_str());
  std::vector<size_t> shape = SizeShape(get());
  static char empty_data;
  nb::object out;
  if (Memory() == VIGIL_MEMORY_HOST) {
    void* data = const_cast<void*>(vigil_value_data(get()));
    nb::ndarray<nb::numpy> view(data ? data : &empty_data, shape.size(), shape.data(), self, nullptr, dt, kDlpackCpu,
                                0);
    out = nb::cast(view);
  } else {
    // Device memory: one copy into a new host buffer that the array owns.
    if (!session_) throw nb::value_error("this device value has no session to copy it with");
    const size_t bytes = ByteSize();
    void* host = std::malloc(bytes ? bytes : 1);
    if (!host) throw std::bad_alloc();
    nb::capsule owner(host, [](void* p) noexcept { std::free(p); });
    vigil_tensor src{};
    vigil_value_as_tensor(get(), &src);
    vigil_tensor dst = src;
    dst.data = host;
    dst.memory = VIGIL_MEMORY_HOST;
    dst.device_id = 0;
    vigil_status* status = nullptr;
    {
      nb::gil_scoped_release unlocked;
      status = vigil_session_copy(session_->session, &src, &dst);
    }
    Check(status);
    nb::ndarray<nb::numpy> copy(host, shape.size(), shape.data(), owner, nullptr, dt, kDlpackCpu, 0);
    out = nb::cast(copy);
  }
  return dtype == VIGIL_DTYPE_BFLOAT16 ? ViewAsBfloat16(out) : out;
}

nb::object Value::AsDlpackArray(nb::handle self) const {
  bool ok = false;
  nb::dlpack::dtype dt = DlpackFromDType(DType(), &ok);
  if (!ok) throw nb::type_error(("output '" + Name() + "' has dtype " + vigil_dtype_name(DType()) + ", which DLPack cannot describe").c_str());
  std::vector<size_t> shape = SizeShape(get());
  const bool device = Memory() == VIGIL_MEMORY_CUDA;
  static char empty_data;
  void* data = const_cast<void*>(vigil_value_data(get()));
  nb::ndarray<nb::array_api> array(data ? data : &empty_data, shape.size(), shape.data(), self, nullptr, dt,
                                   device ? kDlpackCuda : kDlpackCpu, device ? DeviceId() : 0);
  return nb::cast(array);
}

namespace {

std::string OnnxTypeString(vigil_dtype dtype) {
  switch (dtype) {
    case VIGIL_DTYPE_FLOAT32: return "tensor(float)";
    case VIGIL_DTYPE_FLOAT64: return "tensor(double)";
    default: return std::string("tensor(") + vigil_dtype_name(dtype) + ")";
  }
}

}  // namespace

void BindTensors(nb::module_& m) {
  nb::class_<Value>(m, "OrtValue",
                    "A tensor vigil produced (an io_binding output): host or CUDA memory. numpy() gives a numpy "
                    "array (a view of host memory, a copy of device memory); __dlpack__ hands it to torch, cupy, "
                    "jax or numpy without a copy.")
      .def_prop_ro("name", &Value::Name)
      .def("shape", &Value::Shape, "The dims, as a list of ints.")
      .def("data_type", [](const Value& v) { return OnnxTypeString(v.DType()); }, "'tensor(float)', ...")
      .def("element_type_name", [](const Value& v) { return std::string(vigil_dtype_name(v.DType())); },
           "'float32', 'float16', 'int64', ...")
      .def("device_name", [](const Value& v) { return v.Memory() == VIGIL_MEMORY_CUDA ? "cuda" : "cpu"; })
      .def("device_id", &Value::DeviceId)
      .def("data_ptr", &Value::DataPtr, "The address of the data (host or device).")
      .def_prop_ro("nbytes", &Value::ByteSize)
      .def("is_tensor", [](const Value&) { return true; })
      .def("has_value", [](const Value&) { return true; })
      .def("numpy", [](nb::handle self) { return nb::cast<const Value&>(self).Numpy(self); },
           "The value as a numpy array: a view of host memory, or a copy of device memory.")
      .def(
          "__dlpack__",
          [](nb::handle self, nb::kwargs kwargs) {
            // vigil's outputs are complete when the run returns, so the
            // consumer's stream needs no synchronisation.
            nb::object array = nb::cast<const Value&>(self).AsDlpackArray(self);
            if (kwargs.contains("max_version") && !kwargs["max_version"].is_none()) {
              return array.attr("__dlpack__")(nb::arg("max_version") = kwargs["max_version"]);
            }
            return array.attr("__dlpack__")();
          },
          "DLPack export (array API standard); stream and copy are accepted and need nothing.")
      .def("__dlpack_device__",
           [](const Value& v) {
             return v.Memory() == VIGIL_MEMORY_CUDA ? nb::make_tuple(kDlpackCuda, v.DeviceId())
                                                    : nb::make_tuple(kDlpackCpu, 0);
           })
      .def("__repr__", [](const Value& v) {
        std::string dims;
        for (int64_t d : v.Shape()) dims += (dims.empty() ? "" : ",") + std::to_string(d);
        return "<vigil.OrtValue '" + v.Name() + "' " + vigil_dtype_name(v.DType()) + "[" + dims + "] on " +
               (v.Memory() == VIGIL_MEMORY_CUDA ? "cuda:" + std::to_string(v.DeviceId()) : std::string("cpu")) +
               ">";
      });
}

}  // namespace vigil_python
