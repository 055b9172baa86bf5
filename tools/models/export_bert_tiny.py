#!/usr/bin/env python3
"""Exports the tiny BERT test models (needs torch, transformers, onnx):

    python3 tools/models/export_bert_tiny.py tests/models/bert_tiny

transformers' BertModel with 2 layers, hidden 64, 4 heads (head size 16),
intermediate 128, a vocabulary of 64 tokens and 32 positions, random weights
(seed 0), called with (input_ids, attention_mask) and returning the last
hidden state; exported as bench/peer_bench.py exports BERT-base (torch.onnx,
opset 17, constant folding), with the batch N and the sequence S dynamic:
- bert_tiny_fp32.onnx;
- bert_tiny_fp16.onnx: the float32 export converted by peer_bench.to_fp16.
transformers' SDPA attention is exported as Mul(q), Mul(k^T), MatMul,
Add(mask), Softmax, IsNaN/Where (a fully masked row gives 0), MatMul: the
pattern the attention fusion (ir/fuse_attention.h) takes.
"""
import os
import sys

import torch
from transformers import BertConfig, BertModel

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import peer_bench  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
config = BertConfig(vocab_size=64, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                    max_position_embeddings=32)


class Bert(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bert = BertModel(config)

    def forward(self, input_ids, attention_mask):
        return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


model = Bert().eval()
ids = torch.randint(0, 64, (2, 16))
mask = torch.ones(2, 16, dtype=torch.int64)
fp32 = os.path.join(out, "bert_tiny_fp32.onnx")
with torch.no_grad():
    torch.onnx.export(model, (ids, mask), fp32, opset_version=17, input_names=["input_ids", "attention_mask"],
                      output_names=["last_hidden_state"], dynamo=False, do_constant_folding=True,
                      dynamic_axes={k: {0: "N", 1: "S"} for k in ("input_ids", "attention_mask")})
peer_bench.to_fp16(fp32, os.path.join(out, "bert_tiny_fp16.onnx"))
for name in ("bert_tiny_fp32.onnx", "bert_tiny_fp16.onnx"):
    print("exported", name, os.path.getsize(os.path.join(out, name)))
