"""SessionOptions and execution providers, with onnxruntime's names, mapped
onto vigil_session_options."""

import enum
import os

CUDA_PROVIDER = "CUDAExecutionProvider"
CPU_PROVIDER = "CPUExecutionProvider"
PROVIDERS = (CUDA_PROVIDER, CPU_PROVIDER)
_PROVIDER_ALIASES = {"cuda": CUDA_PROVIDER, "cpu": CPU_PROVIDER}
BACKEND_CPU, BACKEND_CUDA = 0, 1
# vigil_session_backends' names -> provider names.
BACKEND_PROVIDERS = {"cuda": CUDA_PROVIDER, "cpu": CPU_PROVIDER}
_LAYOUTS = {"auto": 0, "nchw": 1}


class GraphOptimizationLevel(enum.IntEnum):
    """onnxruntime's levels. vigil always infers shapes and plans memory;
    ORT_DISABLE_ALL turns its constant folding off, the others leave it on."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


def _as_bool(value, what):
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("0", "1", "true", "false"):
        return value.strip().lower() in ("1", "true")
    raise TypeError(f"{what} takes True/False (or 0/1), got {value!r}")


def _as_int(value, what, minimum=0):
    """An int, also from onnxruntime's string values ("0") and integral floats (2e9)."""
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.strip().lstrip("-").isdigit():
        number = int(value)
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    if number is None:
        raise TypeError(f"{what} takes an int, got {value!r}")
    if number < minimum:
        raise ValueError(f"{what} must be at least {minimum}, got {number}")
    return number


def _as_path(value, what):
    if value is None:
        return None
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    raise TypeError(f"{what} takes a path (str) or None, got {value!r}")


class _Option:
    """A typed SessionOptions attribute: checked when set."""

    def __init__(self, check, default, doc):
        self.check, self.default, self.__doc__ = check, default, doc

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return obj._values.get(self.name, self.default)

    def __set__(self, obj, value):
        obj._values[self.name] = self.check(value, f"SessionOptions.{self.name}")


def _layout(value, what):
    if isinstance(value, str) and value.lower() in _LAYOUTS:
        return value.lower()
    raise ValueError(f"{what} is 'auto' or 'nchw', got {value!r}")


def _float(value, what):
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    raise TypeError(f"{what} takes a number of seconds >= 0, got {value!r}")


class SessionOptions:
    """onnxruntime.SessionOptions for vigil. Attributes are typed: a wrong type
    or an unknown name raises. CUDA provider options (device_id,
    gpu_mem_limit, enable_cuda_graph, use_tf32, prefer_nhwc,
    cudnn_conv_algo_search) override the matching attributes here."""

    __slots__ = ("_values",)

    # onnxruntime's names
    intra_op_num_threads = _Option(lambda v, w: _as_int(v, w), 0,
                                   "Threads for one CPU node's matrix products: 0 all cores, 1 the calling "
                                   "thread alone, N at most N.")
    inter_op_num_threads = _Option(lambda v, w: _as_int(v, w), 0,
                                   "Accepted for onnxruntime scripts; vigil runs nodes in order.")
    enable_profiling = _Option(_as_bool, False,
                               "Synchronise after every device node, so that session.profile() times are device "
                               "times.")
    graph_optimization_level = _Option(lambda v, w: GraphOptimizationLevel(int(v)),
                                       GraphOptimizationLevel.ORT_ENABLE_ALL,
                                       "ORT_DISABLE_ALL turns constant folding off.")
    execution_mode = _Option(lambda v, w: ExecutionMode(int(v)), ExecutionMode.ORT_SEQUENTIAL,
                             "Accepted for onnxruntime scripts; vigil runs nodes in order.")
    log_severity_level = _Option(lambda v, w: _as_int(v, w), 2, "Accepted for onnxruntime scripts.")
    log_verbosity_level = _Option(lambda v, w: _as_int(v, w), 0, "Accepted for onnxruntime scripts.")
    enable_cpu_mem_arena = _Option(_as_bool, True, "Accepted; vigil always plans one arena per session.")
    enable_mem_pattern = _Option(_as_bool, True, "Accepted; vigil always plans memory by liveness.")
    enable_mem_reuse = _Option(_as_bool, True, "Accepted; vigil always reuses memory by liveness.")
    # CUDA settings, named as onnxruntime's CUDA provider options
    device_id = _Option(lambda v, w: _as_int(v, w), 0, "CUDA device ordinal.")
    gpu_mem_limit = _Option(lambda v, w: _as_int(v, w), 0,
                            "Refuse runs whose planned device memory exceeds this many bytes (0: free memory).")
    enable_cuda_graph = _Option(_as_bool, False, "Record fixed-shape runs as CUDA graphs and replay them.")
    use_tf32 = _Option(_as_bool, False, "float32 convolutions and products may use TF32.")
    # vigil's own
    layout = _Option(_layout, "auto",
                     "'auto': 2D convolutions run channels-last where faster (on the GPU; float32 ones on the CPU "
                     "with oneDNN); 'nchw': as the model says.")
    deterministic = _Option(_as_bool, False, "Only deterministic algorithms (bitwise-equal repeated outputs).")
    tune = _Option(_as_bool, False, "Autotune convolutions and products on first use.")
    tuning_cache_file = _Option(_as_path, None, "Algorithm choices read (and, with tune, appended).")
    cudnn_log_file = _Option(_as_path, None, "Write cuDNN's API log here; its tail joins cuDNN failures.")
    constant_folding = _Option(_as_bool, True, "Evaluate constant subgraphs at load.")
    cuda_module_path = _Option(_as_path, None, "libvigil_cuda.so to load (default: next to libvigil.so).")
    isolate = _Option(_as_bool, False, "Run each run in a child process (a crash becomes a CrashedError).")
    isolate_timeout_s = _Option(_float, 0.0, "With isolate: kill a run after this long (0: no limit).")
    run_as_float16 = _Option(_as_bool, False,
                             "Compute a float32 model in float16 (weights converted at load; inputs and outputs "
                             "stay float32).")
    allow_tf32x3 = _Option(_as_bool, True,
                           "Without use_tf32, large float32 matrix products run as three TF32 products of split "
                           "operands (3xTF32: about 2e-5 relative error on transformers, near float32's, and "
                           "about 1.6x faster at batch 64); False: CUDA cores only.")
    measure_first_run = _Option(_as_bool, True,
                                "Without tune, the operations whose library pick is often slow (matrix products of "
                                ">= 2^31 multiply-adds, memory-bound float32 convolutions without TF32) time their "
                                "candidates on their first run and keep the fastest; False: the libraries' first "
                                "picks, for the fastest first result.")
    tf32x3_convolutions = _Option(_as_bool, False,
                                  "Without use_tf32, float32 convolutions run as three TF32 convolutions of split "
                                  "operands, channels-last: 1.4x to 2x faster on ResNet-50, but further from exact "
                                  "than allow_tf32x3's products, more so in deep networks (3.2e-4 relative on a "
                                  "random-weight ResNet-50, 5.5e-5 on MobileNetV2; TF32: 2e-2).")

    def __init__(self, **options):
        object.__setattr__(self, "_values", {})
        for name, value in options.items():
            setattr(self, name, value)

    def __setattr__(self, name, value):
        if not isinstance(getattr(type(self), name, None), _Option):
            raise AttributeError(f"SessionOptions has no option '{name}'; its options: {', '.join(self.names())}")
        object.__setattr__(self, name, value)

    @classmethod
    def names(cls):
        return [n for n, v in vars(cls).items() if isinstance(v, _Option)]

    def __repr__(self):
        changed = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"SessionOptions({changed})"

    def to_vigil(self):
        """vigil_session_options fields (without backends)."""
        return {
            "device_id": self.device_id,
            "allow_tf32": self.use_tf32,
            "deterministic": self.deterministic,
            "gpu_mem_limit": self.gpu_mem_limit,
            "layout": _LAYOUTS[self.layout],
            "cuda_graphs": self.enable_cuda_graph,
            "cudnn_log_file": self.cudnn_log_file,
            "tune": self.tune,
            "tuning_cache_file": self.tuning_cache_file,
            "constant_folding": self.constant_folding
            and self.graph_optimization_level != GraphOptimizationLevel.ORT_DISABLE_ALL,
            "cuda_module_path": self.cuda_module_path,
            "isolate": self.isolate,
            "isolate_timeout_s": self.isolate_timeout_s,
            "intra_op_num_threads": self.intra_op_num_threads,
            "enable_profiling": self.enable_profiling,
            "run_as_float16": self.run_as_float16,
            "allow_tf32x3": self.allow_tf32x3,
            "measure_first_run": self.measure_first_run,
            "tf32x3_convolutions": self.tf32x3_convolutions,
        }


def _algo_search(value, what):
    """(tune, measure_first_run): EXHAUSTIVE measures every convolution and
    product; HEURISTIC and DEFAULT measure none, not even the few that vigil
    measures on their first run by default."""
    choice = str(value).upper()
    if choice == "EXHAUSTIVE":
        return True, True
    if choice in ("HEURISTIC", "DEFAULT"):
        return False, False
    raise ValueError(f"{what} is 'EXHAUSTIVE' (vigil autotunes), 'HEURISTIC' or 'DEFAULT', got {value!r}")


# CUDA provider option -> (SessionOptions attribute, conversion). onnxruntime's
# keys where they mean something here, then vigil's own.
CUDA_OPTIONS = {
    "device_id": ("device_id", lambda v, w: _as_int(v, w)),
    "gpu_mem_limit": ("gpu_mem_limit", lambda v, w: _as_int(v, w)),
    "enable_cuda_graph": ("enable_cuda_graph", _as_bool),
    "use_tf32": ("use_tf32", _as_bool),
    "prefer_nhwc": ("layout", lambda v, w: "auto" if _as_bool(v, w) else "nchw"),
    "cudnn_conv_algo_search": (("tune", "measure_first_run"), _algo_search),
    "deterministic": ("deterministic", _as_bool),
    "tuning_cache_file": ("tuning_cache_file", _as_path),
    "cudnn_log_file": ("cudnn_log_file", _as_path),
    "cuda_module_path": ("cuda_module_path", _as_path),
}
CPU_OPTIONS = {}


def parse_providers(providers, provider_options=None):
    """[(provider name, {option: value})] from onnxruntime's forms: names,
    (name, options) tuples, or names plus a parallel provider_options list."""
    if providers is None:
        providers = [CPU_PROVIDER]
    if isinstance(providers, (str, tuple)):
        providers = [providers]
    if provider_options is not None and len(provider_options) != len(providers):
        raise ValueError("provider_options must have one dict per provider")
    parsed = []
    for i, entry in enumerate(providers):
        if isinstance(entry, tuple):
            if len(entry) != 2 or not isinstance(entry[1], dict):
                raise TypeError(f"a provider tuple is (name, options dict), got {entry!r}")
            name, options = entry
        else:
            name, options = entry, {}
        if provider_options is not None:
            options = {**options, **(provider_options[i] or {})}
        if not isinstance(name, str):
            raise TypeError(f"a provider is a name or a (name, options) tuple, got {entry!r}")
        name = _PROVIDER_ALIASES.get(name.lower(), name)
        if name not in PROVIDERS:
            raise ValueError(f"unknown execution provider '{name}'; vigil has: {', '.join(PROVIDERS)}")
        if any(p == name for p, _ in parsed):
            raise ValueError(f"execution provider '{name}' is listed twice")
        accepted = CUDA_OPTIONS if name == CUDA_PROVIDER else CPU_OPTIONS
        for key in options:
            if key not in accepted:
                known = ", ".join(accepted) if accepted else "none"
                raise ValueError(f"unknown {name} option '{key}'; the options vigil accepts for it: {known}")
        parsed.append((name, dict(options)))
    if not parsed:
        raise ValueError(f"providers is empty; list at least one of {', '.join(PROVIDERS)}")
    return parsed


def provider_options_applied(providers, running):
    """onnxruntime's get_provider_options(): each running provider's options as strings."""
    return {name: {k: str(v) for k, v in options.items()} for name, options in providers if name in running}


def vigil_options(sess_options, providers):
    """The options dict for the extension: sess_options, then each provider's
    options over it, and the backends in the order given."""
    merged = SessionOptions(**(sess_options._values if sess_options is not None else {}))
    for name, options in providers:
        table = CUDA_OPTIONS if name == CUDA_PROVIDER else CPU_OPTIONS
        for key, value in options.items():
            attribute, convert = table[key]
            converted = convert(value, f"{name} option '{key}'")
            if isinstance(attribute, tuple):  # one provider option, several session options
                for one, part in zip(attribute, converted):
                    setattr(merged, one, part)
            else:
                setattr(merged, attribute, converted)
    result = merged.to_vigil()
    result["backends"] = [BACKEND_CUDA if name == CUDA_PROVIDER else BACKEND_CPU for name, _ in providers]
    return result
