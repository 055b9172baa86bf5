// vigil._vigil: the Python extension over vigil's public C API (vigil/vigil.h).
// Nothing here includes vigil's internals; the Python package (python/vigil/)
// builds onnxruntime's names on top of these thin objects.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "vigil/vigil.h"

namespace vigil_python {

namespace nb = nanobind;

// Raises the vigil.VigilError subclass for a failing status (released here).
[[noreturn]] void RaiseStatus(vigil_status* status);
inline void Check(vigil_status* status) {
  if (status) RaiseStatus(status);
}

// A session shared by the objects that need it after a run (values whose
// device memory is copied to the host through it).
struct SessionHandle {
  vigil_session* session = nullptr;
  explicit SessionHandle(vigil_session* s) : session(s) {}
  ~SessionHandle() { vigil_session_release(session); }
  SessionHandle(const SessionHandle&) = delete;
  SessionHandle& operator=(const SessionHandle&) = delete;
};

// A caller's tensor as vigil_tensor, with what keeps its memory alive.
struct TensorArg {
  std::string name;
  std::string source;
  vigil_dtype dtype = VIGIL_DTYPE_UNDEFINED;
  std::vector<int64_t> shape;
  void* data = nullptr;
  size_t byte_size = 0;
  vigil_memory memory = VIGIL_MEMORY_HOST;
  int device_id = 0;
  nb::ndarray<nb::ro> array;  // set when the tensor came through DLPack or the buffer protocol
  nb::object keep;            // set when it came from a vigil.OrtValue

  vigil_tensor c() const {
    return vigil_tensor{name.c_str(), dtype,     shape.empty() ? nullptr : shape.data(),
                        shape.size(), data,      byte_size,
                        memory,       device_id, source.empty() ? nullptr : source.c_str()};
  }
};

// `obj` as a tensor named `name`: a numpy array or any object with
// __dlpack__ (read in place; it must be C-contiguous), a DLPack capsule, a
// vigil.OrtValue, or a raw description tuple
// (data_ptr, byte_size, vigil_dtype, shape, vigil_memory, device_id).
TensorArg ToTensor(const std::string& name, nb::handle obj);

// A vigil_value (owned from here on) as a numpy array over its host memory,
// without a copy: the array's base releases the value.
nb::object HostValueToNumpy(vigil_value* value);

// A run's output or a bound output: onnxruntime's OrtValue for vigil.
class Value {
 public:
  Value(vigil_value* value, std::shared_ptr<SessionHandle> session)
      : value_(value, vigil_value_release), session_(std::move(session)) {}

  vigil_value* get() const { return value_.get(); }
  std::string Name() const { return vigil_value_name(get()); }
  vigil_dtype DType() const { return vigil_value_dtype(get()); }
  std::vector<int64_t> Shape() const;
  vigil_memory Memory() const { return vigil_value_memory(get()); }
  int DeviceId() const;
  size_t ByteSize() const { return vigil_value_byte_size(get()); }
  uintptr_t DataPtr() const { return reinterpret_cast<uintptr_t>(vigil_value_data(get())); }
  // Host memory: a view (the array keeps `self` alive); device memory: a copy.
  nb::object Numpy(nb::handle self) const;
  // The value as nanobind's DLPack-capable array (no copy; keeps `self`).
  nb::object AsDlpackArray(nb::handle self) const;

 private:
  std::shared_ptr<vigil_value> value_;
  std::shared_ptr<SessionHandle> session_;
};

// DLPack dtype <-> vigil dtype.
vigil_dtype DTypeFromDlpack(nb::dlpack::dtype dt);
nb::dlpack::dtype DlpackFromDType(vigil_dtype dtype, bool* ok);
size_t DTypeSize(vigil_dtype dtype);

void BindTensors(nb::module_& m);

}  // namespace vigil_python
