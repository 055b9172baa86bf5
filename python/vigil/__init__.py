"""vigil: an ONNX inference runtime for NVIDIA GPUs, built on cuDNN, in which
every failure is a diagnosis.

The names are onnxruntime's::

    import numpy as np, vigil
    session = vigil.InferenceSession("model.onnx", providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    x = np.zeros([1, 3, 224, 224], np.float32)
    (probs,) = session.run(None, {session.get_inputs()[0].name: x})

Every failure raises a vigil.VigilError subclass whose message starts with
the one-line summary and whose ``.diagnosis`` holds the facts, likely causes
and fixes.
"""

import json as _json
import os as _os

from . import _vigil
from ._errors import (CrashedError, DeviceFaultError, InternalError, InvalidInputError, InvalidModelError,
                      OutOfMemoryError, UnsupportedError, VigilEnvironmentError, VigilError)
from ._options import CPU_PROVIDER, CUDA_PROVIDER, ExecutionMode, GraphOptimizationLevel, SessionOptions
from ._session import InferenceSession, IOBinding, OrtValue
from ._tensors import NodeArg

__version__ = _vigil.version()

__all__ = [
    "InferenceSession", "SessionOptions", "IOBinding", "OrtValue", "NodeArg", "GraphOptimizationLevel",
    "ExecutionMode", "VigilError", "InvalidModelError", "InvalidInputError", "UnsupportedError",
    "OutOfMemoryError", "VigilEnvironmentError", "DeviceFaultError", "CrashedError", "InternalError", "doctor",
    "get_available_providers", "get_all_providers", "get_device", "get_version_string",
]


def doctor():
    """The doctor's report on this machine's GPU stack (driver, CUDA runtime,
    cuDNN and its sub-libraries, cuBLASLt, GPUs; each finding with its fix), as
    a dict. Probes in child processes, so a crashing library is a finding."""
    return _json.loads(_vigil.doctor_report_json())


def get_all_providers():
    return [CUDA_PROVIDER, CPU_PROVIDER]


def get_available_providers():
    """The providers this installation ships: CUDAExecutionProvider when the
    CUDA module (libvigil_cuda.so) is installed beside libvigil.so. Whether it
    can run on this machine is doctor()'s business; asking for it where it
    cannot raises with that diagnosis."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    shipped = _os.path.exists(_os.path.join(here, "libvigil_cuda.so")) or bool(_os.environ.get("VIGIL_CUDA_MODULE"))
    return [CUDA_PROVIDER, CPU_PROVIDER] if shipped else [CPU_PROVIDER]


def get_device():
    """'GPU' when this installation ships the CUDA module, else 'CPU'."""
    return "GPU" if CUDA_PROVIDER in get_available_providers() else "CPU"


def get_version_string():
    return __version__

