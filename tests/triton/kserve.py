"""A small client of Triton's HTTP endpoint: the KServe v2 protocol with
Triton's binary-data extension, on http.client (no client package needed).

Inputs go as raw bytes after the JSON header; outputs come back the same way
(request parameter binary_data_output), so float tensors cross bit-exactly.
One Client holds one keep-alive connection: use one per thread.
"""

import http.client
import json

import numpy as np

NUMPY_OF = {
    "BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
    "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64, "FP16": np.float16,
    "FP32": np.float32, "FP64": np.float64,
}
DATATYPE_OF = {np.dtype(v): k for k, v in NUMPY_OF.items()}


class Reply:
    """status (HTTP), outputs {name: array} on success, error text otherwise."""

    def __init__(self, status, outputs=None, error=None, body=None):
        self.status, self.outputs, self.error, self.body = status, outputs or {}, error, body

    @property
    def ok(self):
        return self.status == 200 and self.error is None

    def __repr__(self):
        return f"Reply({self.status}, outputs={list(self.outputs)}, error={self.error!r})"


class Client:
    def __init__(self, port, timeout=60):
        self.port, self.timeout = port, timeout
        self.conn = None

    def close(self):
        if self.conn:
            self.conn.close()
            self.conn = None

    def request(self, method, path, body=None, headers=None):
        """(status, headers, body bytes); reconnects once if the server closed the connection."""
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            try:
                self.conn.request(method, path, body=body, headers=headers or {})
                r = self.conn.getresponse()
                return r.status, dict(r.getheaders()), r.read()
            except (http.client.HTTPException, ConnectionError):
                self.close()
                if attempt:
                    raise

    def get_json(self, path):
        status, _, body = self.request("GET", path)
        return status, json.loads(body) if body else None

    def post_json(self, path, obj=None):
        status, _, body = self.request("POST", path, json.dumps(obj or {}).encode(),
                                       {"Content-Type": "application/json"})
        return status, json.loads(body) if body else None

    def infer(self, model, inputs, outputs=None, request_id=None):
        """inputs: {name: array}, or a list of dicts {name, datatype, shape, data (bytes or array)}
        to send what an array could not say (a wrong byte size, a datatype the data does not have)."""
        specs = []
        if isinstance(inputs, dict):
            for name, array in inputs.items():
                array = np.ascontiguousarray(array)
                specs.append({"name": name, "datatype": DATATYPE_OF[array.dtype], "shape": list(array.shape),
                              "data": array.tobytes()})
        else:
            for spec in inputs:
                data = spec["data"]
                specs.append(dict(spec, data=data if isinstance(data, bytes) else np.ascontiguousarray(data).tobytes()))
        header = {"inputs": [{"name": s["name"], "datatype": s["datatype"], "shape": [int(d) for d in s["shape"]],
                              "parameters": {"binary_data_size": len(s["data"])}} for s in specs],
                  "parameters": {"binary_data_output": True}}
        if request_id is not None:
            header["id"] = request_id
        if outputs is not None:
            header["outputs"] = [{"name": n, "parameters": {"binary_data": True}} for n in outputs]
        head = json.dumps(header).encode()
        body = head + b"".join(s["data"] for s in specs)
        status, headers, raw = self.request("POST", f"/v2/models/{model}/infer", body, {
            "Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(len(head))})
        return parse_reply(status, headers, raw)


def parse_reply(status, headers, raw):
    lengths = {k.lower(): v for k, v in headers.items()}
    n = int(lengths.get("inference-header-content-length", len(raw)))
    try:
        doc = json.loads(raw[:n])
    except ValueError:
        return Reply(status, error=f"(not JSON) {raw[:200]!r}", body=raw)
    if status != 200 or "error" in doc:
        return Reply(status, error=doc.get("error", ""), body=doc)
    outputs, offset = {}, n
    for out in doc.get("outputs", []):
        dtype = NUMPY_OF[out["datatype"]]
        size = out.get("parameters", {}).get("binary_data_size")
        if size is None:
            array = np.asarray(out["data"], dtype=dtype)
        else:
            array = np.frombuffer(raw[offset:offset + size], dtype=dtype)
            offset += size
        outputs[out["name"]] = array.reshape(out["shape"])
    return Reply(status, outputs=outputs, body=doc)
