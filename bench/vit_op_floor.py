#!/usr/bin/env python3
"""What ViT-B/16's kernels cost in PyTorch on this GPU, op by op: the
floor a runtime that calls the same libraries meets.

    python3 bench/vit_op_floor.py [--batch 64] [--iters 200] [--dtype fp16]

For one ViT-B/16 encoder (12 layers, E 768, H 12, MLP 3072, S 197 tokens
per image) at the given batch it times, with CUDA events (median of
--iters runs after a warm-up, inputs random, never zeros), the ops every
layer runs once:
- the four Linear layers (QKV 768->2304, out-projection 768->768, MLP
  768->3072 and 3072->768) as torch.nn.functional.linear: cuBLAS(Lt) with
  the bias fused;
- scaled-dot-product attention (torch's fastest kernel for the shape);
- GELU (exact) on the MLP activation; LayerNorm on the residual stream;
and prints each op's time, its count per model and the model's total.
The GEMMs' total is what any runtime built on cuBLAS pays; comparing it
with PyTorch eager's whole-model time shows how far the goal "2x eager" is
reachable by removing everything but the GEMMs. Needs torch.
"""
import argparse
import statistics

import torch
import torch.nn.functional as F

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def median_us(fn, iters):
    for _ in range(10):
        fn()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--dtype", choices=sorted(DTYPES), default="fp16")
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    dt = DTYPES[a.dtype]
    dev = "cuda"
    b, s, e, h, mlp, layers = a.batch, 197, 768, 12, 3072, 12
    tokens = b * s
    g = torch.Generator(device=dev).manual_seed(0)

    def rand(*shape, scale=1.0):
        return (torch.rand(*shape, device=dev, generator=g, dtype=torch.float32) * 2 - 1).mul(scale).to(dt)

    x = rand(tokens, e)
    hidden = rand(tokens, mlp)
    rows = []
    with torch.inference_mode():
        for name, k, n, inp in (("Linear QKV", e, 3 * e, x), ("Linear out-proj", e, e, x),
                                ("Linear MLP up", e, mlp, x), ("Linear MLP down", mlp, e, hidden)):
            w, bias = rand(n, k, scale=0.05), rand(n)
            us = median_us(lambda: F.linear(inp, w, bias), a.iters)
            tflops = 2 * tokens * k * n / us / 1e6
            rows.append((name, f"[{tokens}x{k}]x[{k}x{n}]", us, layers, f"{tflops:.0f} TFLOP/s"))
        q, kk, v = (rand(b, h, s, e // h) for _ in range(3))
        us = median_us(lambda: F.scaled_dot_product_attention(q, kk, v), a.iters)
        rows.append(("SDPA", f"[{b},{h},{s},{e // h}]", us, layers, ""))
        us = median_us(lambda: F.gelu(hidden), a.iters)
        gbs = 2 * hidden.numel() * hidden.element_size() / us / 1e3
        rows.append(("GELU (exact)", f"[{tokens}x{mlp}]", us, layers, f"{gbs:.0f} GB/s"))
        ln_w, ln_b = rand(e), rand(e)
        us = median_us(lambda: F.layer_norm(x, (e,), ln_w, ln_b), a.iters)
        gbs = 2 * x.numel() * x.element_size() / us / 1e3
        rows.append(("LayerNorm", f"[{tokens}x{e}]", us, 2 * layers + 1, f"{gbs:.0f} GB/s"))
    print(f"GPU {torch.cuda.get_device_name()}, torch {torch.__version__}, {a.dtype}, batch {b}")
    print("| op | shape | us | per model | model ms | rate |")
    print("|---|---|---|---|---|---|")
    gemm = 0.0
    for name, shape, us, count, rate in rows:
        print(f"| {name} | {shape} | {us:.1f} | {count} | {us * count / 1000:.3f} | {rate} |")
        if name.startswith("Linear"):
            gemm += us * count / 1000
    print(f"GEMMs of one model: {gemm:.3f} ms")


if __name__ == "__main__":
    main()
