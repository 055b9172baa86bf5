"""vigil's errors: one exception class per diagnosis code, each carrying the
whole diagnosis (summary, facts, likely causes, fixes) as ``.diagnosis``."""

import json

__all__ = [
    "VigilError",
    "InvalidModelError",
    "InvalidInputError",
    "UnsupportedError",
    "OutOfMemoryError",
    "VigilEnvironmentError",
    "DeviceFaultError",
    "CrashedError",
    "InternalError",
]


class VigilError(RuntimeError):
    """A failure vigil diagnosed.

    str(error) starts with the headline: the most likely cause and its fix.
    The lines after it are the symptom, the other facts, likely causes and
    fixes as ``vigil`` prints them.

    Attributes:
        code: the diagnosis code name ("InvalidInput", "Environment", ...).
        headline: the most likely cause and its fix, one line.
        summary: what was observed to go wrong (the symptom), one line.
        diagnosis: the diagnosis as a dict: {"headline", "code", "summary", "facts":
            [{"name", "value"}], "causes": [{"what", "evidence"}], "fixes": [...]}.
        text: the diagnosis as vigil prints it.
    """

    code = "Internal"

    def __init__(self, summary, diagnosis=None, text=None, headline=None):
        self.summary = summary
        self.headline = headline if headline else summary
        if diagnosis and diagnosis.get("code"):
            self.code = diagnosis["code"]
        self.diagnosis = diagnosis if diagnosis is not None else {
            "headline": self.headline, "code": self.code, "summary": summary, "facts": [], "causes": [],
            "fixes": []}
        self.text = text if text is not None else f"error [{self.code}]: {self.headline}\n"
        super().__init__(_message(self.code, self.text))

    @property
    def facts(self):
        """The facts as a dict, name -> value."""
        return {f["name"]: f["value"] for f in self.diagnosis.get("facts", [])}

    @property
    def causes(self):
        return [c["what"] for c in self.diagnosis.get("causes", [])]

    @property
    def fixes(self):
        return list(self.diagnosis.get("fixes", []))


class InvalidModelError(VigilError, ValueError):
    """The model file or graph is malformed."""

    code = "InvalidModel"


class InvalidInputError(VigilError, ValueError):
    """An input (or argument) does not fit the model."""

    code = "InvalidInput"


class UnsupportedError(VigilError):
    """Valid, but vigil or the chosen backend cannot do it."""

    code = "Unsupported"


class OutOfMemoryError(VigilError):
    """A predicted or actual allocation does not fit."""

    code = "OutOfMemory"


class VigilEnvironmentError(VigilError):
    """Drivers, libraries, variables or files outside the model are wrong
    (named so as not to shadow the builtin EnvironmentError)."""

    code = "Environment"


class DeviceFaultError(VigilError):
    """The device failed while running."""

    code = "DeviceFault"


class CrashedError(VigilError):
    """The isolated process running the model died."""

    code = "Crashed"


class InternalError(VigilError):
    """A bug in vigil."""

    code = "Internal"


_BY_CODE = {cls.code: cls for cls in (InvalidModelError, InvalidInputError, UnsupportedError, OutOfMemoryError,
                                      VigilEnvironmentError, DeviceFaultError, CrashedError, InternalError)}


def _message(code, text):
    # vigil_status_text starts with "error [Code]: headline"; the exception's
    # class already names the code, so the message starts with the headline.
    prefix = f"error [{code}]: "
    text = text.rstrip("\n")
    return text[len(prefix):] if text.startswith(prefix) else text


def _from_status(code, code_name, headline, summary, text, diagnosis_json):
    """Called by the extension for a failing vigil_status."""
    try:
        diagnosis = json.loads(diagnosis_json)
    except ValueError:
        diagnosis = None
    cls = _BY_CODE.get(code_name, VigilError)
    return cls(summary, diagnosis, text, headline)
