#!/usr/bin/env python3
"""Runs on the GPU machine (needs torch, torchvision, onnx): exports small
models with the same graph structure as the peer benchmark's, for
developing graph passes on a machine without torch.

    python3 tools/models/export_structures.py OUT_DIR

Writes, with random weights (seed 0), exported as bench/peer_bench.py does:
- vit_tiny_{fp32,fp16}.onnx: torchvision VisionTransformer with 2 layers,
  hidden 64, 4 heads, MLP 128, 32x32 images, 8x8 patches;
- vit_layer1_fp16.onnx: one ViT-B/16-sized layer (hidden 768, 12 heads),
  10 classes;
- mobilenet_v2_fp16.onnx: the full torchvision MobileNetV2;
- vit_b16_graph.txt: the node list of ViT-B/16's first encoder layer with
  the shapes onnx's shape inference gives at batch 64.
"""
import os
import sys

import onnx
import torch
import torchvision.models as tvm
from torchvision.models.vision_transformer import VisionTransformer

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.backends.mha.set_fastpath_enabled(False)


def export(m, name, dtype, size, batch_dim=True):
    torch.manual_seed(0)
    m = m.to("cpu", dtype).eval()
    x = torch.randn(1, 3, size, size, dtype=dtype)
    path = os.path.join(out, name)
    with torch.no_grad():
        torch.onnx.export(m, (x,), path, opset_version=17, input_names=["input_0"], dynamo=False,
                          dynamic_axes={"input_0": {0: "N"}} if batch_dim else None, do_constant_folding=True)
    print("exported", path, os.path.getsize(path), flush=True)
    return path


torch.manual_seed(0)
tiny = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128,
                         num_classes=10)
export(tiny, "vit_tiny_fp32.onnx", torch.float32, 32)
export(tiny, "vit_tiny_fp16.onnx", torch.float16, 32)
torch.manual_seed(0)
layer1 = VisionTransformer(image_size=224, patch_size=16, num_layers=1, num_heads=12, hidden_dim=768, mlp_dim=3072,
                           num_classes=10)
export(layer1, "vit_layer1_fp16.onnx", torch.float16, 224)
torch.manual_seed(0)
export(tvm.mobilenet_v2(), "mobilenet_v2_fp16.onnx", torch.float16, 224)

# The node list of one real-size layer, with inferred shapes at batch 64.
m = onnx.load(os.path.join(out, "vit_layer1_fp16.onnx"))
m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 64
m = onnx.shape_inference.infer_shapes(m)
shapes = {}
for vi in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
    shapes[vi.name] = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in vi.type.tensor_type.shape.dim]
inits = {i.name: list(i.dims) for i in m.graph.initializer}
with open(os.path.join(out, "vit_b16_graph.txt"), "w") as f:
    for n in m.graph.node:
        attrs = ", ".join(f"{a.name}={onnx.helper.get_attribute_value(a)}" for a in n.attribute
                          if a.type != onnx.AttributeProto.TENSOR)
        ins = ", ".join(f"{i}{shapes.get(i, inits.get(i, '?'))}" for i in n.input)
        outs = ", ".join(f"{o}{shapes.get(o, '?')}" for o in n.output)
        f.write(f"{n.op_type}({attrs}) {ins} -> {outs}\n")
print("wrote graph", flush=True)
