#!/usr/bin/env python3
"""Would float32 convolutions gain from 3xTF32? A probe on the GPU machine.

For every convolution of a torchvision CNN (random weights), at the given
batches, times through PyTorch's cuDNN (cudnn.benchmark on, CUDA events,
median of --iters runs after warm-up):
  exact  float32, TF32 off (what vigil runs today without --tf32);
  tf32   one TF32 convolution (what --tf32 runs);
  3x     one TF32 convolution of the tripled input [x_hi | x_lo | x_hi]
         with weights [w_hi | w_hi | w_lo] along the input channels, which
         computes x_hi*w_hi + x_lo*w_hi + x_hi*w_lo (3xTF32, as
         src/backends/cuda/split_tf32.h does for matrix products);
  split  building the tripled input (torch.cat of three tensors; a fused
         kernel would move the same bytes),
in NCHW and in channels-last, and the 3x result's relative L2 against a
float64 convolution. Prints one row per distinct convolution and the totals
weighted by how often each occurs. Not a test: it decides whether vigil's
convolutions should carry the split.

  python3 tools/device/conv_tf32x3_probe.py --models resnet50 --batches 1 64
"""
import argparse
import collections
import statistics
import sys

import torch
import torchvision


def split_tf32(x):
    """hi = x rounded to TF32 (10 mantissa bits, nearest), lo = x - hi, rounded too."""
    def round_tf32(v):
        bits = v.contiguous().view(torch.int32)
        rounded = ((bits + 0x1000) & ~0x1FFF)
        return rounded.view(torch.float32)
    hi = round_tf32(x)
    lo = round_tf32(x - hi)
    return hi, lo


def conv_shapes(name):
    model = getattr(torchvision.models, name)(weights=None).eval()
    seen = collections.Counter()
    hooks = []

    def hook(mod, inp, _out):
        key = (tuple(inp[0].shape[1:]), tuple(mod.weight.shape), mod.stride, mod.padding, mod.groups)
        seen[key] += 1

    for m in model.modules():
        if isinstance(m, torch.nn.Conv2d):
            hooks.append(m.register_forward_hook(hook))
    with torch.no_grad():
        model(torch.randn(1, 3, 224, 224))
    return seen


def time_ms(fn, iters):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    return event_median_ms(fn, iters)


def event_median_ms(fn, iters):
    """The median over `iters` calls of fn's time between two CUDA events."""
    times = []
    for _ in range(iters):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def probe(key, batch, iters, channels_last):
    (c, h, w_), wshape, stride, padding, groups = key
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(batch, c, h, w_, device="cuda", generator=g)
    w = torch.randn(*wshape, device="cuda", generator=g) * (1.0 / (wshape[1] * wshape[2] * wshape[3]) ** 0.5)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    x = x.contiguous(memory_format=fmt)
    w = w.contiguous(memory_format=fmt)
    conv = lambda a, b, grp=groups: torch.nn.functional.conv2d(a, b, None, stride, padding, 1, grp)
    xh, xl = split_tf32(x)
    wh, wl = split_tf32(w)
    n = x.shape[0]
    if groups == 1:
        x3 = torch.cat([xh, xl, xh], 1).contiguous(memory_format=fmt)
        w3 = torch.cat([wh, wh, wl], 1).contiguous(memory_format=fmt)
        conv3 = lambda: conv(x3, w3)
        if channels_last:  # one copy kernel: read X, write the three segments of each pixel
            xt = x.permute(0, 2, 3, 1)
            split = lambda: xt.unsqueeze(3).expand(n, h, w_, 3, c).contiguous()
        else:
            split = lambda: x.unsqueeze(1).expand(n, 3, c, h, w_).contiguous()
    else:  # grouped: each group's inputs tripled in place
        cg = c // groups
        x3 = torch.stack([xh.reshape(n, groups, cg, h, w_), xl.reshape(n, groups, cg, h, w_),
                          xh.reshape(n, groups, cg, h, w_)], 2).reshape(n, 3 * c, h, w_).contiguous(memory_format=fmt)
        w3 = torch.cat([wh, wh, wl], 1).contiguous(memory_format=fmt)
        conv3 = lambda: conv(x3, w3)
        split = lambda: torch.cat([x, x, x], 1).contiguous(memory_format=fmt)
    torch.backends.cudnn.allow_tf32 = False
    t_exact = time_ms(lambda: conv(x, w), iters)
    y_exact = conv(x, w)
    torch.backends.cudnn.allow_tf32 = True
    t_tf32 = time_ms(lambda: conv(x, w), iters)
    y_tf32 = conv(x, w)
    t_3x = time_ms(conv3, iters)
    y_3x = conv3()
    t_split = time_ms(split, iters)
    torch.backends.cudnn.benchmark = False  # the heuristics' pick: no Winograd or FFT transform, as a rule
    y_3x_heur = conv3()
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    ref = torch.nn.functional.conv2d(x.double(), w.double(), None, stride, padding, 1, groups)
    rel = lambda y: float((y.double() - ref).norm() / ref.norm())
    return t_exact, t_tf32, t_3x, t_split, rel(y_exact), rel(y_tf32), rel(y_3x), rel(y_3x_heur)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["resnet50"])
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 64])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--channels-last", action="store_true", help="NHWC tensors as well as NCHW")
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}")
    layouts = [False, True] if args.channels_last else [False]
    for name in args.models:
        shapes = conv_shapes(name)
        for batch in args.batches:
            for cl in layouts:
                print(f"\n## {name} batch {batch} {'NHWC' if cl else 'NCHW'}")
                print("| x (C,H,W) | w | stride | groups | count | exact ms | tf32 ms | 3x ms | split ms | 3x+split / exact | rel L2 exact | tf32 | 3x | 3x, heuristic pick |")
                print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
                tot = [0.0] * 4
                for key, count in shapes.items():
                    if key[4] != 1 and key[4] == key[0][0]:
                        continue  # depthwise: not a tensor-core product either way
                    r = probe(key, batch, args.iters, cl)
                    for i in range(4):
                        tot[i] += count * r[i]
                    print(f"| {key[0]} | {key[1]} | {key[2]} | {key[4]} | {count} | {r[0]:.4f} | {r[1]:.4f} | {r[2]:.4f} | "
                          f"{r[3]:.4f} | {(r[2] + r[3]) / r[0]:.2f} | {r[4]:.1e} | {r[5]:.1e} | {r[6]:.1e} | {r[7]:.1e} |", flush=True)
                print(f"| total | | | | | {tot[0]:.3f} | {tot[1]:.3f} | {tot[2]:.3f} | {tot[3]:.3f} | "
                      f"{(tot[2] + tot[3]) / tot[0]:.2f} | | | | |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
