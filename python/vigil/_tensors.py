"""Element types, model input/output descriptions, and callers' tensors made
ready for the extension without copying them."""

import numpy as np

from . import _vigil

# vigil_dtype (ONNX TensorProto.DataType) -> (ONNX type name, numpy dtype).
_DTYPES = {
    1: ("float", np.dtype(np.float32)),
    2: ("uint8", np.dtype(np.uint8)),
    3: ("int8", np.dtype(np.int8)),
    4: ("uint16", np.dtype(np.uint16)),
    5: ("int16", np.dtype(np.int16)),
    6: ("int32", np.dtype(np.int32)),
    7: ("int64", np.dtype(np.int64)),
    8: ("string", np.dtype(object)),
    9: ("bool", np.dtype(np.bool_)),
    10: ("float16", np.dtype(np.float16)),
    11: ("double", np.dtype(np.float64)),
    12: ("uint32", np.dtype(np.uint32)),
    13: ("uint64", np.dtype(np.uint64)),
    16: ("bfloat16", None),
}
_BY_NUMPY = {dt: code for code, (_, dt) in _DTYPES.items() if dt is not None and code != 8}

MEMORY_HOST = 0
MEMORY_CUDA = 1
_DLPACK_CPU, _DLPACK_CUDA, _DLPACK_CUDA_HOST, _DLPACK_CUDA_MANAGED = 1, 2, 3, 13
# DLPack's name for CUDA's legacy default stream: a producer orders its work
# before it, and vigil's run waits for it.
LEGACY_DEFAULT_STREAM = 1


def onnx_type(dtype_code):
    """'tensor(float)' for vigil dtype 1, ..."""
    name = _DTYPES.get(dtype_code, (None,))[0] or _vigil.dtype_name(dtype_code)
    return f"tensor({name})"


def vigil_dtype(element_type):
    """The vigil dtype of a numpy dtype, type or name (np.float32, 'float16')."""
    if isinstance(element_type, int) and not isinstance(element_type, bool):
        return element_type
    try:
        dt = np.dtype(element_type)
    except TypeError:
        dt = None
    if dt is None or dt not in _BY_NUMPY:
        if str(element_type) == "bfloat16":
            return 16
        raise TypeError(f"element_type {element_type!r} is no ONNX tensor type vigil takes "
                        f"(numpy dtypes: {', '.join(sorted(str(d) for d in _BY_NUMPY))})")
    return _BY_NUMPY[dt]


def memory_kind(device_type):
    """vigil_memory for onnxruntime's device_type ('cpu', 'cuda', 'cuda:0')."""
    kind = str(device_type).lower().split(":")[0]
    if kind == "cpu":
        return MEMORY_HOST
    if kind in ("cuda", "gpu"):
        return MEMORY_CUDA
    raise ValueError(f"device_type {device_type!r}: vigil takes 'cpu' or 'cuda'")


class NodeArg:
    """A model input or output, as onnxruntime.NodeArg: name, shape (ints,
    symbolic dims as strings, None where unknown), type ('tensor(float)')."""

    __slots__ = ("name", "shape", "type", "dtype")

    def __init__(self, name, dtype_code, dims, dim_names):
        self.name = name
        self.type = onnx_type(dtype_code)
        self.dtype = _DTYPES.get(dtype_code, (None, None))[1]
        if dims is None:
            self.shape = None
        else:
            self.shape = [d if d >= 0 else (n or None) for d, n in zip(dims, dim_names)]

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


def _capsule(obj, stream):
    """obj.__dlpack__ for a consumer on `stream` (None for host memory)."""
    try:
        return obj.__dlpack__(stream=stream, max_version=(1, 0))
    except TypeError:  # producers older than the 2023 array API
        return obj.__dlpack__(stream=stream) if stream is not None else obj.__dlpack__()


def _from_cuda_array_interface(obj, device_id):
    cai = obj.__cuda_array_interface__
    dt = np.dtype(cai["typestr"])
    shape = [int(d) for d in cai["shape"]]
    strides = cai.get("strides")
    if strides is not None:
        expected, contiguous = dt.itemsize, True
        for dim, stride in zip(reversed(shape), reversed(strides)):
            contiguous &= dim == 1 or stride == expected
            expected *= dim
        if not contiguous:
            raise ValueError(f"{type(obj).__name__} is not C-contiguous; vigil reads inputs in place: "
                             "make it contiguous first")
    nbytes = dt.itemsize * int(np.prod(shape, dtype=np.int64))
    source = f"{type(obj).__module__}.{type(obj).__name__}"
    raw = (int(cai["data"][0] or 0), nbytes, vigil_dtype(dt), shape, MEMORY_CUDA, device_id, source)
    return raw, cai.get("stream")


class Prepared:
    """A caller's tensor ready for the extension: `tensor` (a numpy array, a
    DLPack capsule, an OrtValue or a raw tuple), `source` for messages, whether
    it is device memory, the CUDA stream its producer named (if any), and
    `keep`, the object whose memory it is."""

    __slots__ = ("tensor", "source", "on_device", "stream", "keep")

    def __init__(self, tensor, source, on_device, stream=None, keep=None):
        self.tensor, self.source, self.on_device, self.stream = tensor, source, on_device, stream
        self.keep = keep if keep is not None else tensor


def prepare(obj, device_id=0):
    """Reads `obj` in place where it can: numpy arrays (a non-contiguous one is
    made contiguous), objects with __dlpack__ (torch, cupy, jax: CUDA ones as
    device memory, ordered before CUDA's legacy default stream), objects with
    __cuda_array_interface__, vigil.OrtValue; anything else through
    np.asarray."""
    if isinstance(obj, np.ndarray):
        return Prepared(obj if obj.flags.c_contiguous else np.ascontiguousarray(obj), None, False)
    if isinstance(obj, _vigil.OrtValue):
        return Prepared(obj, None, obj.device_name() == "cuda")
    source = f"{type(obj).__module__}.{type(obj).__name__}"
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        device_type = int(obj.__dlpack_device__()[0])
        if device_type in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED):
            return Prepared(_capsule(obj, LEGACY_DEFAULT_STREAM), source, True, LEGACY_DEFAULT_STREAM, keep=obj)
        if device_type in (_DLPACK_CPU, _DLPACK_CUDA_HOST):
            return Prepared(_capsule(obj, None), source, False, keep=obj)
        return Prepared(obj, source, False)  # the extension names the device it cannot take
    if hasattr(obj, "__cuda_array_interface__"):
        raw, stream = _from_cuda_array_interface(obj, device_id)
        return Prepared(raw, source, True, stream, keep=obj)
    array = np.asarray(obj)
    return Prepared(array if array.flags.c_contiguous else np.ascontiguousarray(array), None, False)


def raw_tensor(device_type, device_id, element_type, shape, buffer, what):
    """onnxruntime's (device_type, device_id, element_type, shape, buffer_ptr)
    as a raw tensor. `buffer` is an address (its size is then taken from the
    shape, as onnxruntime does) or, better, the array itself: vigil then checks
    the shape against the buffer's real byte size."""
    if element_type is None or shape is None:
        raise TypeError(f"{what}: a buffer needs element_type and shape")
    dtype = vigil_dtype(element_type)
    shape = [int(d) for d in shape]
    memory = memory_kind(device_type)
    if isinstance(buffer, int) and not isinstance(buffer, bool):
        numpy_dtype = _DTYPES.get(dtype, (None, None))[1]
        itemsize = 2 if numpy_dtype is None else numpy_dtype.itemsize  # None: bfloat16
        nbytes = itemsize * int(np.prod(shape, dtype=np.int64))
        return Prepared((buffer, nbytes, dtype, shape, memory, int(device_id), "pointer"), None,
                        memory == MEMORY_CUDA, keep=None)
    prepared = prepare(buffer, int(device_id))
    ptr, nbytes, _, _, _, _, source = _vigil.tensor_info(prepared.tensor)
    raw = (ptr, nbytes, dtype, shape, memory, int(device_id), prepared.source or source)
    return Prepared(raw, None, memory == MEMORY_CUDA, prepared.stream, keep=(prepared.keep, prepared.tensor))
