"""The vigil Triton backend (libtriton_vigil.so) in the real Triton server.

The server is tritonserver 2.51 from the PyPI wheel nvidia-pytriton==0.7.0,
which scripts/triton_env.sh unzips into <build>/triton/pytriton (ctest passes
that as VIGIL_TRITON_DEFAULT_SERVER). VIGIL_TRITONSERVER=PATH overrides it:
the tritonserver binary, or a folder holding the unzipped wheel. Without a
server the session fails and says how to get one; nothing is skipped.

VIGIL_TRITON_BACKEND_DIR is the folder holding vigil/libtriton_vigil.so
(<build>/triton/backends). VIGIL_TRITON_KIND=GPU runs every model as
KIND_GPU with VIGIL_TRITON_INSTANCES instances (default 2), for
tools/device/triton_check.sh; the default is KIND_CPU.

One server serves the whole session, on 127.0.0.1 with free ports, in
explicit model-control mode over a repository built in a temporary folder
from tests/models/tiny (plus small models written with the onnx package).
The models that must fail to load are loaded by the tests that expect it.
"""

import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kserve  # noqa: E402
import repository  # noqa: E402

KIND = os.environ.get("VIGIL_TRITON_KIND", "CPU").upper()
INSTANCES = int(os.environ.get("VIGIL_TRITON_INSTANCES", "2" if KIND == "GPU" else "1"))
DEFAULT_MAX_BATCH_SIZE = 8  # passed as --backend-config=vigil,default-max-batch-size (Triton's own default is 4)

# Lines printed after the tests (latency, throughput, memory): see pytest_terminal_summary.
REPORT = []


def find_server():
    """The tritonserver binary, or None, with the places looked at."""
    looked = []
    for var in ("VIGIL_TRITONSERVER", "VIGIL_TRITON_DEFAULT_SERVER"):
        value = os.environ.get(var)
        if not value:
            continue
        p = pathlib.Path(value)
        for candidate in (p, p / "pytriton" / "tritonserver" / "bin" / "tritonserver",
                          p / "tritonserver" / "bin" / "tritonserver", p / "bin" / "tritonserver"):
            looked.append(f"{candidate} ({var})")
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate, looked
    return None, looked


def pytest_sessionstart(session):
    server, looked = find_server()
    problems = []
    if server is None:
        problems.append("no tritonserver found; looked at: " + ("; ".join(looked) or
                        "nothing (neither VIGIL_TRITONSERVER nor VIGIL_TRITON_DEFAULT_SERVER is set)") +
                        "\n  fix: scripts/triton_env.sh BUILD_DIR downloads nvidia-pytriton==0.7.0 from PyPI and "
                        "unzips it into BUILD_DIR/triton/pytriton (scripts/setup.sh runs it), or set "
                        "VIGIL_TRITONSERVER to a tritonserver binary")
    backend = pathlib.Path(os.environ.get("VIGIL_TRITON_BACKEND_DIR", "")) / "vigil" / "libtriton_vigil.so"
    if not backend.is_file():
        problems.append(f"no backend at {backend}\n  fix: build the triton_vigil target and set "
                        "VIGIL_TRITON_BACKEND_DIR to <build>/triton/backends")
    if problems:
        pytest.exit("the Triton backend tests cannot run:\n" + "\n".join(problems), returncode=1)


def pytest_terminal_summary(terminalreporter):
    if REPORT:
        terminalreporter.section("vigil Triton backend: figures")
        for line in REPORT:
            terminalreporter.write_line(line)


def free_ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class Server:
    """A running tritonserver: port, pid, log; client() makes a connection."""

    def __init__(self, binary, repo, backends, log_path):
        self.binary, self.repo, self.backends, self.log_path = binary, repo, backends, log_path
        self.proc = None
        self.port = self.metrics_port = None

    def start(self):
        for _ in range(3):
            http, grpc, metrics = free_ports(3)
            self.log = open(self.log_path, "ab")
            cmd = [str(self.binary), f"--model-repository={self.repo}", f"--backend-directory={self.backends}",
                   "--model-control-mode=explicit", "--http-address=127.0.0.1", "--grpc-address=127.0.0.1",
                   "--metrics-address=127.0.0.1", f"--http-port={http}", f"--grpc-port={grpc}",
                   f"--metrics-port={metrics}",
                   f"--backend-config=vigil,default-max-batch-size={DEFAULT_MAX_BATCH_SIZE}",
                   "--exit-timeout-secs=10"]
            self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
            self.port, self.metrics_port = http, metrics
            if self.wait_live(60):
                return
            self.stop()
        pytest.fail("tritonserver did not start; its log:\n" + self.log_tail())

    def wait_live(self, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                if self.call("GET", "/v2/health/live", timeout=5)[0] == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.2)
        return False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.log.close()

    def log_tail(self, lines=60):
        try:
            return "\n".join(pathlib.Path(self.log_path).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def client(self, timeout=60):
        return kserve.Client(self.port, timeout=timeout)

    def rss_kib(self):
        for line in pathlib.Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS in /proc/PID/status")

    def call(self, method, path, port=None, timeout=120):
        """(status, body bytes) over a connection of its own."""
        c = kserve.Client(port or self.port, timeout=timeout)
        try:
            status, _, body = c.request(method, path, b"{}" if method == "POST" else None)
            return status, body
        finally:
            c.close()

    def load(self, model):
        """(HTTP status, error text or None) of loading `model`."""
        status, body = self.call("POST", f"/v2/repository/models/{model}/load")
        return status, (json.loads(body) if body else {}).get("error")

    def stats(self, model):
        """The model's statistics once every answered request is in them.

        A backend reports a request's statistics after it sends the reply
        (Triton's order: respond, report, release), so a client holding its
        reply may read counts that lack it for a few microseconds. Read until
        two reads 50 ms apart agree (at most 10 s)."""
        def read():
            status, body = self.call("GET", f"/v2/models/{model}/stats")
            assert status == 200, body
            return json.loads(body)["model_stats"][0]

        last = read()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = read()
            if now["inference_stats"] == last["inference_stats"] and \
                    now.get("batch_stats") == last.get("batch_stats"):
                return now
            last = now
        raise AssertionError(f"the statistics of {model} did not settle in 10 s")

    def index(self):
        status, body = self.call("POST", "/v2/repository/index")
        assert status == 200, body
        return {entry["name"]: entry for entry in json.loads(body)}

    def metrics(self):
        status, body = self.call("GET", "/metrics", port=self.metrics_port)
        assert status == 200
        return body.decode()


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    binary, _ = find_server()
    root = tmp_path_factory.mktemp("triton")
    repo = root / "repository"
    repository.build(repo, KIND, INSTANCES)
    s = Server(binary, repo, os.environ["VIGIL_TRITON_BACKEND_DIR"], root / "server.log")
    s.start()
    try:
        for model in repository.LOADABLE:
            status, error = s.load(model)
            if status != 200:
                pytest.fail(f"model {model} did not load: {error}\nserver log:\n{s.log_tail()}")
        yield s
    finally:
        s.stop()


@pytest.fixture
def client(server):
    c = server.client()
    yield c
    c.close()


# ---- References: the same models run by vigil itself (the Python package) ----------

_sessions = {}
_sessions_lock = threading.Lock()


def vigil_session(path):
    import vigil
    path = str(path)
    with _sessions_lock:
        if path not in _sessions:
            providers = ["CUDAExecutionProvider", "CPUExecutionProvider"] if KIND == "GPU" else ["CPUExecutionProvider"]
            _sessions[path] = vigil.InferenceSession(path, providers=providers)
        return _sessions[path]


def vigil_run(path, inputs, outputs=None):
    """{name: array} as vigil runs the model."""
    session = vigil_session(path)
    names = outputs or [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs)))


def vigil_diagnosis(path, inputs):
    """The text of vigil's error for these inputs (the Python package raises it)."""
    import vigil
    with pytest.raises(vigil.VigilError) as info:
        vigil_session(path).run(None, inputs)
    return str(info.value)


def assert_same(got, want, what):
    """CPU: bit for bit (the same backend runs on both sides). GPU: relative L2
    <= 1e-4, vigil's float32 bound against onnxruntime, since batches of other
    sizes may choose other cuDNN/cuBLASLt algorithms. NaN never passes."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, vigil gives {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, vigil gives {want.dtype}"
    if np.issubdtype(got.dtype, np.floating):
        assert not np.isnan(got).any() and not np.isnan(want).any(), f"{what}: NaN"
    if KIND != "GPU":
        assert np.array_equal(got, want), f"{what}: differs from vigil's run (max |diff| " \
                                          f"{np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))})"
    else:
        assert relative_l2(got, want) <= 1e-4, f"{what}: relative L2 {relative_l2(got, want)} > 1e-4"


def relative_l2(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if np.isnan(got).any() or np.isnan(want).any():
        return float("inf")
    d = np.linalg.norm(want.ravel())
    n = np.linalg.norm((got - want).ravel())
    return float(n / d) if d > 0 else float(n)


def diagnosis_parts(text):
    """(first line, [fixes]) of a vigil diagnosis text: the first line is the
    headline, "<cause> — fix: <fix>"; the other fixes are listed under
    "other fixes:"."""
    lines = text.splitlines()
    fixes = [lines[0].split(" — fix: ", 1)[1]] if " — fix: " in lines[0] else []
    in_fixes = False
    for line in lines[1:]:
        if line.startswith("other fixes:"):
            in_fixes = True
        elif in_fixes and line.startswith("  - "):
            fixes.append(line.strip()[2:])
        elif not line.startswith(" "):
            in_fixes = False
    return lines[0], fixes


def concurrently(calls):
    """Runs each call on its own thread, started together; their results in order."""
    results = [None] * len(calls)
    barrier = threading.Barrier(len(calls))

    def work(i, call):
        barrier.wait()
        try:
            results[i] = call()
        except Exception as e:  # noqa: BLE001 - reported by the test
            results[i] = e

    threads = [threading.Thread(target=work, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return results
