"""PyTorch models whose ONNX export holds data-dependent control flow or ends
in NonMaxSuppression, for the real-model checks (export_models.py builds them
by name; check_models.py compares vigil with onnxruntime on them).

- branch_gate: two data-dependent `if`s (torch.jit.script), one taking its
  then-branch and one its else-branch, on values computed outside them: two If
  nodes whose branches read the enclosing graph.
- loop_rnn: a recurrent cell unrolled by a `for` over a trip count read from
  an input tensor, then a `while` whose condition the body computes: two Loop
  nodes with loop-carried values and outer-scope weights.
- nms_detector: a small convolutional box head that decodes boxes and ends in
  torchvision.ops.nms (NonMaxSuppression) and a Gather of the kept boxes.

Weights are random (seeded by export_models.py).
"""
import torch
import torch.nn as nn


class BranchGate(nn.Module):
    def __init__(self, d: int = 64):
        super().__init__()
        self.inp = nn.Linear(d, d)
        self.hot = nn.Linear(d, d)

    def forward(self, x):
        h = self.inp(x)
        m = h.mean()
        if bool(m > -1e9):  # always true: the then-branch
            a = torch.relu(self.hot(h))
        else:
            a = torch.tanh(h)
        if bool(m > 1e9):  # always false: the else-branch
            b = torch.relu(self.hot(h))
        else:
            b = torch.sigmoid(h) * 2.0
        return a + b


class LoopRnn(nn.Module):
    def __init__(self, d: int = 32):
        super().__init__()
        self.cell = nn.Linear(2 * d, d)
        self.d = d

    def forward(self, x, steps):
        h = torch.zeros(x.shape[0], self.d)
        acc = torch.zeros(x.shape[0], self.d)
        for _ in range(int(steps)):
            h = torch.tanh(self.cell(torch.cat([x, h], 1)))
            acc = acc + h
        i = 0
        while bool(acc.abs().sum() < 1e4) and i < 40:
            acc = acc * 1.5 + h
            i += 1
        return acc


class NmsDetector(nn.Module):
    """Conv features -> per-anchor box (cx, cy, w, h) and score -> NMS."""

    def __init__(self, c: int = 32):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1), nn.ReLU(), nn.Conv2d(c, c, 3, 2, 1), nn.ReLU())
        self.box = nn.Conv2d(c, 4, 1)
        self.score = nn.Conv2d(c, 1, 1)

    def forward(self, image):
        import torchvision
        f = self.body(image)
        n, _, gh, gw = f.shape
        ys = torch.arange(gh, dtype=torch.float32).view(gh, 1).expand(gh, gw)
        xs = torch.arange(gw, dtype=torch.float32).view(1, gw).expand(gh, gw)
        d = self.box(f)[0]
        cx = (xs + torch.sigmoid(d[0])) * 4.0
        cy = (ys + torch.sigmoid(d[1])) * 4.0
        w = torch.exp(d[2].clamp(max=2.0)) * 6.0
        h = torch.exp(d[3].clamp(max=2.0)) * 6.0
        boxes = torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], -1).reshape(-1, 4)
        scores = torch.sigmoid(self.score(f)[0, 0]).reshape(-1)
        keep = torchvision.ops.nms(boxes, scores, 0.5)
        return boxes[keep], scores[keep]


def build_control_flow(name, tiny):
    """(module, example args, opset) or None for names not defined here."""
    if name == "branch_gate":
        return torch.jit.script(BranchGate(32 if tiny else 64)), (torch.randn(4, 32 if tiny else 64),), 17
    if name == "loop_rnn":
        return torch.jit.script(LoopRnn(16 if tiny else 32)), (torch.randn(3, 16 if tiny else 32),
                                                              torch.tensor(7, dtype=torch.int64)), 17
    if name == "nms_detector":
        return NmsDetector(8 if tiny else 32), (torch.randn(1, 3, 64, 64),), 17
    return None


CONTROL_FLOW = ["branch_gate", "loop_rnn", "nms_detector"]
