#!/usr/bin/env python3
"""Would convolutions run faster as cuBLAS products? A probe.

For every non-depthwise convolution of a torchvision CNN (random weights),
at the given batches, in one precision (--precision: fp32 exact, TF32 off
everywhere; tf32, TF32 on in cuDNN and cuBLAS; fp16, float16 data with
float32 accumulation), times
(CUDA events, median of --iters runs after warm-up):
  cudnn     the convolution through PyTorch's cuDNN (cudnn.benchmark on:
            its fastest exact engine), NCHW and channels-last;
  gemm      the same convolution as one cuBLAS float32 product:
              1x1, stride 1:  NCHW  Y[n] = W[M,C] . X[n][C,HW] (batched),
                              NHWC  Y[NHW,M] = X[NHW,C] . W^T;
              1x1, stride s:  the same after a strided copy of X (timed
                              with it);
              k x k:          the product of an already gathered patch
                              matrix [NHW, C*k*k] (the gather, `unfold`,
                              is timed apart: a fused gather would move
                              the same bytes at best once);
and each result's relative L2 against a float64 convolution. Prints one
row per distinct convolution and totals weighted by occurrence. Not a
test: it decides whether vigil should route exact convolutions to cuBLAS.

  python3 tools/device/conv_gemm_probe.py --models resnet50 --batches 1 64
"""
import argparse
import collections
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conv_tf32x3_probe import conv_shapes, event_median_ms  # noqa: E402  (every Conv2d's shape and count)


def time_ms(fn, iters, reps=20):
    """GPU time of one call: a CUDA graph of `reps` calls, replayed `iters`
    times (median), so that host launch gaps do not count."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(reps):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    return event_median_ms(graph.replay, iters) / reps


def probe(key, batch, iters, dtype):
    (c, h, w_), wshape, stride, padding, groups = key
    m, _, kh, kw = wshape
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(batch, c, h, w_, device="cuda", generator=g).to(dtype)
    w = (torch.randn(*wshape, device="cuda", generator=g) * (1.0 / (wshape[1] * kh * kw) ** 0.5)).to(dtype)
    conv = lambda a, b: torch.nn.functional.conv2d(a, b, None, stride, padding, 1, groups)
    ref = torch.nn.functional.conv2d(x.double(), w.double(), None, stride, padding, 1, groups)
    rel = lambda y: float((y.double() - ref).norm() / ref.norm())
    xl = x.contiguous(memory_format=torch.channels_last)
    wl = w.contiguous(memory_format=torch.channels_last)
    t_nchw = time_ms(lambda: conv(x, w), iters)
    t_nhwc = time_ms(lambda: conv(xl, wl), iters)
    e_cudnn = rel(conv(x, w))
    oh, ow = ref.shape[2], ref.shape[3]
    n = batch
    w2 = w.reshape(m, c * kh * kw)
    if kh == 1 and kw == 1 and padding == (0, 0):
        sh, sw = stride
        if (sh, sw) == (1, 1):
            xn = x.reshape(n, c, h * w_)
            gemm_nchw = lambda: torch.matmul(w2, xn)
            xt = xl.permute(0, 2, 3, 1).reshape(n * h * w_, c)  # a view: channels-last storage
            gemm_nhwc = lambda: torch.matmul(xt, w2.t())
        else:
            gemm_nchw = lambda: torch.matmul(w2, x[:, :, ::sh, ::sw].contiguous().reshape(n, c, oh * ow))
            gemm_nhwc = lambda: torch.matmul(xl[:, :, ::sh, ::sw].permute(0, 2, 3, 1).contiguous().reshape(n * oh * ow, c), w2.t())
        t_g_nchw = time_ms(gemm_nchw, iters)
        t_g_nhwc = time_ms(gemm_nhwc, iters)
        e_gemm = rel(gemm_nchw().reshape(n, m, oh, ow))
        e_gemm_t = rel(gemm_nhwc().reshape(n, oh, ow, m).permute(0, 3, 1, 2))
        t_gather = 0.0
    else:
        unfold = lambda: torch.nn.functional.unfold(x, (kh, kw), 1, padding, stride)  # [N, C*k*k, L]
        p = unfold()
        pt = p.transpose(1, 2).reshape(n * oh * ow, c * kh * kw).contiguous()
        t_gather = time_ms(unfold, iters)
        t_g_nchw = time_ms(lambda: torch.matmul(w2, p), iters)
        t_g_nhwc = time_ms(lambda: torch.matmul(pt, w2.t()), iters)
        e_gemm = rel(torch.matmul(w2, p).reshape(n, m, oh, ow))
        e_gemm_t = rel(torch.matmul(pt, w2.t()).reshape(n, oh, ow, m).permute(0, 3, 1, 2))
    return t_nchw, t_nhwc, t_g_nchw, t_g_nhwc, t_gather, e_cudnn, e_gemm, e_gemm_t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["resnet50"])
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 64])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--precision", choices=["fp32", "tf32", "fp16"], default="fp32")
    args = ap.parse_args()
    tf32 = args.precision == "tf32"
    dtype = torch.float16 if args.precision == "fp16" else torch.float32
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False  # float32 accumulation, as vigil's
    torch.set_float32_matmul_precision("high" if tf32 else "highest")
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"{args.precision}")
    for name in args.models:
        shapes = conv_shapes(name)
        for batch in args.batches:
            print(f"\n## {name} batch {batch}")
            print("| x (C,H,W) | w | stride | count | cudnn NCHW | cudnn NHWC | gemm NCHW | gemm NHWC | gather | "
                  "best gemm / best cudnn | rel L2 cudnn | gemm NCHW | gemm NHWC |")
            print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
            tot = collections.defaultdict(float)
            for key, count in shapes.items():
                if key[4] != 1:
                    continue  # grouped / depthwise: not one product
                r = probe(key, batch, args.iters, dtype)
                one = key[1][2] == 1 and key[1][3] == 1
                best_c, best_g = min(r[0], r[1]), min(r[2], r[3])
                tot["cudnn"] += count * best_c
                tot["cudnn NCHW"] += count * r[0]
                tot["1x1 cudnn"] += count * best_c * one
                tot["1x1 gemm"] += count * best_g * one
                tot["1x1 mixed"] += count * min(best_c, best_g) * one
                tot["kxk cudnn"] += count * best_c * (not one)
                tot["kxk gemm+gather"] += count * (best_g + r[4]) * (not one)
                print(f"| {key[0]} | {key[1]} | {key[2]} | {count} | {r[0]:.4f} | {r[1]:.4f} | {r[2]:.4f} | "
                      f"{r[3]:.4f} | {r[4]:.4f} | {best_g / best_c:.2f} | {r[5]:.1e} | {r[6]:.1e} | {r[7]:.1e} |", flush=True)
            print("\ntotals (ms, each convolution at its better layout): " +
                  ", ".join(f"{k} {v:.3f}" for k, v in tot.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
