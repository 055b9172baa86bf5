"""InferenceSession and IOBinding with onnxruntime's names, over vigil's C API."""

import json
import os
import warnings

from . import _vigil
from ._errors import InvalidInputError, InvalidModelError, VigilError
from ._options import (BACKEND_PROVIDERS, CPU_PROVIDER, CUDA_PROVIDER, SessionOptions, parse_providers,
                       provider_options_applied, vigil_options)
from ._tensors import LEGACY_DEFAULT_STREAM, MEMORY_CUDA, MEMORY_HOST, NodeArg, memory_kind, prepare, raw_tensor

OrtValue = _vigil.OrtValue


def _model_arg(path_or_bytes):
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return bytes(path_or_bytes), None
    if isinstance(path_or_bytes, (str, os.PathLike)):
        path = os.fspath(path_or_bytes)
        return path, path
    raise TypeError(f"InferenceSession takes a model path or the model's bytes, got {type(path_or_bytes).__name__}")


def _wait_stream(streams, has_cuda):
    """The stream vigil's run waits for, given the streams that the device
    inputs' producers named (None: none named): the one stream they all name,
    else CUDA's legacy default stream, which DLPack producers order their work
    before. 0 (none) when the session has no CUDA backend."""
    if not has_cuda:
        return 0
    named = {LEGACY_DEFAULT_STREAM if s is None else int(s) for s in streams}
    return named.pop() if len(named) == 1 else LEGACY_DEFAULT_STREAM


def _stream_handle(stream):
    """A CUDA stream as an address: an int, or torch/cupy stream objects."""
    for attribute in ("cuda_stream", "ptr", "handle"):
        if hasattr(stream, attribute):
            return int(getattr(stream, attribute))
    return int(stream)


class InferenceSession:
    """onnxruntime.InferenceSession on vigil.

    providers: "CUDAExecutionProvider" and/or "CPUExecutionProvider" (default
    CPU), as names or (name, options) tuples. CUDA alone never falls back: if
    it cannot run here, creation raises with the doctor's diagnosis. CUDA
    followed by CPU lets nodes the GPU cannot run use the CPU, and if CUDA
    cannot run at all the session runs on the CPU, with a RuntimeWarning that
    says why (also kept in ``provider_fallback``). get_providers() says what
    really runs.
    """

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        if kwargs:
            raise TypeError(f"InferenceSession got unexpected arguments: {', '.join(kwargs)}")
        if sess_options is not None and not isinstance(sess_options, SessionOptions):
            raise TypeError("sess_options must be a vigil.SessionOptions")
        model, self._model_path = _model_arg(path_or_bytes)
        self._sess_options = sess_options if sess_options is not None else SessionOptions()
        self._providers = parse_providers(providers, provider_options)
        self.provider_fallback = None  # the VigilError that kept CUDA from running, when CPU took over
        self._options = vigil_options(self._sess_options, self._providers)
        names = [name for name, _ in self._providers]
        try:
            self._sess = _vigil.Session(model, self._options)
        except VigilError as error:
            if not (CUDA_PROVIDER in names and CPU_PROVIDER in names) or isinstance(error, (InvalidModelError,)):
                raise
            cpu_only = dict(self._options, backends=[0])
            self._sess = _vigil.Session(model, cpu_only)
            self._options = cpu_only
            self.provider_fallback = error
            warnings.warn(f"CUDAExecutionProvider cannot run here, so this session runs on CPUExecutionProvider "
                          f"only: {error.summary} (the diagnosis: session.provider_fallback; vigil.doctor() "
                          f"checks the GPU stack)", RuntimeWarning, stacklevel=2)
        self._inputs = [NodeArg(*info) for info in self._sess.inputs()]
        self._outputs = [NodeArg(*info) for info in self._sess.outputs()]
        self._backends = [b for b in self._sess.backends().split(",") if b]

    # -- the model --------------------------------------------------------------

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_providers(self):
        """The providers that really run nodes, e.g. ['CUDAExecutionProvider',
        'CPUExecutionProvider']."""
        return [BACKEND_PROVIDERS.get(b, b) for b in self._backends]

    def get_provider_options(self):
        return provider_options_applied(self._providers, self.get_providers())

    def get_session_options(self):
        return self._sess_options

    def describe(self):
        """Where each node runs: {"backends", "nodes_per_backend", "fallbacks":
        [{"node", "backend", "reason"}]}."""
        return json.loads(self._sess.describe_json())

    def notes(self):
        """What vigil wants you to know about this session: fallbacks and why,
        layout, CUDA graph and autotuning notes, the module loaded."""
        return json.loads(self._sess.notes_json())

    # -- running ----------------------------------------------------------------

    def _feed(self, input_feed):
        if not isinstance(input_feed, dict):
            raise TypeError(f"input_feed must be a dict of input name -> array, got {type(input_feed).__name__}")
        device_id = self._options.get("device_id", 0)
        prepared = [(str(name), prepare(value, device_id)) for name, value in input_feed.items()]
        return prepared

    @staticmethod
    def _entries(prepared):
        return [(name, p.tensor, p.source) for name, p in prepared]

    def _wait_stream(self, prepared):
        return _wait_stream([p.stream for _, p in prepared if p.on_device], "cuda" in self._backends)

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model; returns numpy arrays (output_names None or []: all,
        in model order). Inputs are read in place: numpy arrays, objects with
        __dlpack__ or __cuda_array_interface__ (CUDA tensors stay on the
        device), vigil.OrtValue."""
        names = list(output_names) if output_names else None
        prepared = self._feed(input_feed)
        if not any(p.on_device for _, p in prepared):
            return self._sess.run(self._entries(prepared), names)
        values = self._run_bound(prepared, names, MEMORY_HOST)
        return [v.numpy() for v in values]

    def run_with_ort_values(self, output_names, input_feed, run_options=None):
        """As run(), returning vigil.OrtValue objects, kept on the GPU when the
        session runs on CUDA (hand them to torch with torch.from_dlpack)."""
        names = list(output_names) if output_names else [o.name for o in self._outputs]
        memory = MEMORY_CUDA if "cuda" in self._backends else MEMORY_HOST
        return self._run_bound(self._feed(input_feed), names, memory)

    def _run_bound(self, prepared, names, memory):
        binding = _vigil.IoBinding(self._sess)
        for name, p in prepared:
            binding.bind_input(name, p.tensor, p.source)
        for name in names or []:
            binding.bind_output_to(name, memory)
        binding.run(self._sess, self._wait_stream(prepared))
        return binding.outputs()

    def io_binding(self):
        return IOBinding(self)

    def run_with_iobinding(self, iobinding, run_options=None, cuda_stream=None):
        """Runs with the binding's inputs and outputs. cuda_stream (vigil: an
        address, or a torch/cupy stream): the run starts after the work queued
        on it. By default it waits for CUDA's legacy default stream."""
        if not isinstance(iobinding, IOBinding) or iobinding._session is not self:
            raise InvalidInputError("run_with_iobinding takes an IOBinding made by this session's io_binding()")
        if cuda_stream is not None:
            stream = _stream_handle(cuda_stream)
        else:
            stream = iobinding._wait_stream()
        iobinding._c.run(self._sess, stream)

    # -- vigil's own ------------------------------------------------------------

    def check(self, input_feed):
        """Validates inputs against the model without running it; returns the
        symbolic dims they bind ({"N": 8}). Raises InvalidInputError."""
        return json.loads(self._sess.check(self._entries(self._feed(input_feed))) or "{}")

    def plan(self, input_feed):
        """The memory plan for these inputs: {"arena_bytes", "peak_live_bytes",
        "device_arena_bytes", "device_peak_live_bytes", "body_arena_bytes",
        "body_device_arena_bytes", "unplanned_bodies"}; the body_ entries are
        what If/Loop/Scan bodies add while they run (docs/runtime.md)."""
        return json.loads(self._sess.plan_json(self._entries(self._feed(input_feed))))

    def profile(self, input_feed, runs=10):
        """Runs `runs` times timing every node: {"run_ms", "nodes": [...]}."""
        return json.loads(self._sess.profile_json(self._entries(self._feed(input_feed)), int(runs)))

    def __repr__(self):
        model = self._model_path or "<bytes>"
        return f"<vigil.InferenceSession {model!r} on {', '.join(self.get_providers())}>"


class IOBinding:
    """onnxruntime.IOBinding: inputs and outputs bound to memory (host or
    CUDA) before the run, so nothing is copied that need not be.

    bind_input(name, device_type, device_id, element_type, shape, buffer_ptr)
    is onnxruntime's form; buffer_ptr may also be the array itself, and vigil
    then checks the shape against its real size. bind_input(name, tensor)
    takes a numpy array, a torch/cupy tensor (through DLPack or
    __cuda_array_interface__) or a vigil.OrtValue, read in place.
    """

    def __init__(self, session):
        self._session = session
        self._c = _vigil.IoBinding(session._sess)
        # name -> (Prepared): the objects whose memory is bound, kept alive
        # while bound (the extension keeps arrays it read itself; raw pointers
        # it cannot), and the stream their producer named.
        self._inputs = {}
        self._outputs = {}

    def _device_id(self):
        return self._session._options.get("device_id", 0)

    def bind_input(self, name, device_type=None, device_id=0, element_type=None, shape=None, buffer_ptr=None):
        if device_type is None or not isinstance(device_type, str):
            if device_type is None:
                raise TypeError("bind_input(name, tensor) or bind_input(name, device_type, device_id, "
                                "element_type, shape, buffer_ptr)")
            prepared = prepare(device_type, self._device_id())
        else:
            if buffer_ptr is None:
                raise TypeError("bind_input: buffer_ptr is missing")
            prepared = raw_tensor(device_type, device_id, element_type, shape, buffer_ptr, f"input '{name}'")
        self._c.bind_input(name, prepared.tensor, prepared.source)
        self._inputs[name] = prepared

    def bind_cpu_input(self, name, arr_on_cpu):
        self.bind_input(name, arr_on_cpu)

    def bind_ortvalue_input(self, name, ortvalue):
        self.bind_input(name, ortvalue)

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None):
        """bind_output(name, 'cuda'): vigil allocates the output on the GPU
        (get_outputs() then gives device OrtValues); bind_output(name, 'cpu'):
        in host memory; with element_type, shape and buffer_ptr (or
        bind_output(name, tensor)): written into the caller's buffer."""
        if not isinstance(device_type, str):
            prepared = prepare(device_type, self._device_id())
            self._c.bind_output(name, prepared.tensor, prepared.source)
            self._outputs[name] = prepared
        elif buffer_ptr is None:
            self._c.bind_output_to(name, memory_kind(device_type))
            self._outputs.pop(name, None)
        else:
            prepared = raw_tensor(device_type, device_id, element_type, shape, buffer_ptr, f"output '{name}'")
            self._c.bind_output(name, prepared.tensor, prepared.source)
            self._outputs[name] = prepared

    def bind_ortvalue_output(self, name, ortvalue):
        self.bind_output(name, ortvalue)

    def get_outputs(self):
        """The outputs of the last run, in binding order, as vigil.OrtValue
        (host or device; __dlpack__ hands them to torch without a copy)."""
        return self._c.outputs()

    def copy_outputs_to_cpu(self):
        return [value.numpy() for value in self._c.outputs()]

    def get_outputs_names(self):
        return self._c.output_names()

    def clear_binding_inputs(self):
        self._c.clear_inputs()
        self._inputs.clear()

    def clear_binding_outputs(self):
        self._c.clear_outputs()
        self._outputs.clear()

    def synchronize_inputs(self):
        """Nothing to do: vigil's run waits for the inputs' stream itself."""

    def synchronize_outputs(self):
        """Nothing to do: outputs are complete when the run returns."""

    def _wait_stream(self):
        return _wait_stream([p.stream for p in self._inputs.values() if p.on_device], "cuda" in self._session._backends)
