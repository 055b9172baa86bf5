#!/usr/bin/env python3
"""Peer benchmark: vigil (--backend cuda) against PyTorch eager and
torch.compile(mode="reduce-overhead"), on the same GPU in the same call.

    python3 bench/peer_bench.py VIGIL_BINARY OUT_DIR [--models resnet50,mobilenet_v2,vit_b_16]
        [--batches 1,64] [--dtypes fp16] [--iters 50] [--no-compile] [--markdown FILE]
        [--no-mha-fastpath]

For each model (torchvision architecture, random weights, seed 0) and dtype
it exports one ONNX file with a dynamic batch dim, then for each batch:
- PyTorch eager and compiled: inputs already on the GPU, channels_last for
  CNNs, warm-up, then the median of --iters CUDA-event timings of one
  forward pass; nn.MultiheadAttention (ViT) with its fused fast path, as
  PyTorch runs it by default (--no-mha-fastpath turns it off);
- vigil: `vigil bench --backend cuda --dim N=<batch> --inputs-on-device
  --json`, the median wall-clock time of Session::Run with the input already
  on the GPU (as the peer has it), which also copies the output back and
  synchronises; "end to end" is the same without --inputs-on-device (every
  run also copies the input from the host, from the page-locked buffers
  vigil bench allocates through Session::AllocateHostBuffer; before
  2026-11-22 it was pageable memory).
vigil records each run as a CUDA graph after its first run and replays it
(`vigil bench --cuda-graphs on`, the default), as torch.compile's
reduce-overhead mode does. fp32 runs with TF32 off on both sides (PyTorch's
cuDNN allows TF32 by default: it is switched off here).
The table gives milliseconds per batch, images per second, and the speed-up
of vigil over each peer (> 1: vigil is faster). Needs torch and torchvision.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import torch

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def calibrated(model):
    """Sets BatchNorm's running statistics from a few random batches, so that
    activations stay in range through the network: with the default
    statistics a random-weight MobileNetV2 saturates every ReLU6 and its
    output is the same for every input, which makes accuracy checks vacuous."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.momentum = None  # cumulative average over the calibration batches
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(16, 3, 224, 224))
    return model.eval()


def build(name):
    import torchvision.models as tvm
    torch.manual_seed(0)
    if name == "resnet50":
        return calibrated(tvm.resnet50()), True
    if name == "mobilenet_v2":
        return calibrated(tvm.mobilenet_v2()), True
    if name == "vit_b_16":
        m = tvm.vit_b_16()
        torch.nn.init.normal_(m.heads.head.weight, std=0.02)
        return m, False
    raise SystemExit(f"unknown model {name}")


def cuda_ms(fn, x, warmup, iters):
    with torch.no_grad():
        for _ in range(warmup):
            fn(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(x)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def export(model, name, dtype, out_dir):
    path = os.path.join(out_dir, f"{name}_{dtype}.onnx")
    if os.path.exists(path):
        return path
    # The exporter traces nn.MultiheadAttention's Python path, not its fused
    # fast path. The switch is global: it is restored after the export, so
    # that PyTorch eager is timed as users run it, fast path included (until
    # 2026-11-22 it stayed off, and ViT's eager times were the slow path's).
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        m = model.to("cpu", DTYPES[dtype]).eval()
        x = torch.randn(1, 3, 224, 224, dtype=DTYPES[dtype])
        with torch.no_grad():
            torch.onnx.export(m, (x,), path, opset_version=17, input_names=["input_0"], dynamo=False,
                              dynamic_axes={"input_0": {0: "N"}}, do_constant_folding=True)
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)
    return path


def vigil_ms(vigil, path, batch, warmup, iters, on_device):
    cmd = [vigil, "bench", path, "--backend", "cuda", "--no-fallback", "--dim", f"N={batch}", "--warmup",
           str(warmup), "--iters", str(iters), "--json"] + (["--inputs-on-device"] if on_device else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, (r.stdout + r.stderr).strip().splitlines()[:2]
    return json.loads(r.stdout)["p50_ms"], None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("vigil")
    p.add_argument("out")
    p.add_argument("--models", default="resnet50,mobilenet_v2,vit_b_16")
    p.add_argument("--batches", default="1,64")
    p.add_argument("--dtypes", default="fp16")
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--markdown", default="")
    p.add_argument("--no-mha-fastpath", action="store_true",
                   help="time PyTorch with nn.MultiheadAttention's fused fast path off (as every run before "
                        "2026-11-22 did by mistake), to compare with older tables")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    gpu = torch.cuda.get_device_name()
    print(f"GPU {gpu}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}", flush=True)
    if a.no_mha_fastpath:
        torch.backends.mha.set_fastpath_enabled(False)
    rows = []
    for name in a.models.split(","):
        for dt in a.dtypes.split(","):
            model, cnn = build(name)
            path = export(model, name, dt, a.out)
            m = model.to("cuda", DTYPES[dt]).eval()
            if cnn:
                m = m.to(memory_format=torch.channels_last)
            compiled = None if a.no_compile else torch.compile(m, mode="reduce-overhead")
            for batch in [int(b) for b in a.batches.split(",")]:
                x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=DTYPES[dt])
                if cnn:
                    x = x.contiguous(memory_format=torch.channels_last)
                row = {"model": name, "dtype": dt, "batch": batch,
                       "mha_fastpath": torch.backends.mha.get_fastpath_enabled()}
                row["eager_ms"] = cuda_ms(m, x, a.warmup, a.iters)
                if compiled is not None:
                    row["compiled_ms"] = cuda_ms(compiled, x, a.warmup, a.iters)
                row["vigil_ms"], err = vigil_ms(a.vigil, path, batch, a.warmup, a.iters, True)
                if err:
                    row["vigil_error"] = err
                row["vigil_e2e_ms"], _ = vigil_ms(a.vigil, path, batch, a.warmup, a.iters, False)
                rows.append(row)
                print(json.dumps(row), flush=True)
    lines = [f"GPU: {gpu}; torch {torch.__version__} (cuDNN {torch.backends.cudnn.version()}); ms per batch, median",
             "",
             "| model | dtype | batch | PyTorch eager | torch.compile | vigil | vigil img/s | vs eager | vs compiled "
             "| vigil end to end |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        v, e, c = r.get("vigil_ms"), r["eager_ms"], r.get("compiled_ms")
        ms = lambda t: f"{t:.3f}" if t else "-"
        if v:
            vigil = f"{v:.3f} | {r['batch'] / v * 1e3:.0f}"
            ratios = f"{e / v:.2f}x | " + (f"{c / v:.2f}x" if c else "-")
        else:
            vigil = "error: " + " ".join(r.get("vigil_error", []))[:80] + " | -"
            ratios = "- | -"
        lines.append(f"| {r['model']} | {r['dtype']} | {r['batch']} | {ms(e)} | {ms(c)} | {vigil} | {ratios} "
                     f"| {ms(r.get('vigil_e2e_ms'))} |")
    table = "\n".join(lines)
    print(table)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
