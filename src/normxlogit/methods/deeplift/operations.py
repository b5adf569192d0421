"""The torch functions that DeepLift follows by a rule, grouped by kind of operation."""

from __future__ import annotations

import torch
import torch.nn.functional as F

MULTIPLY = (torch.mul, torch.Tensor.mul, torch.Tensor.__mul__, torch.Tensor.__rmul__)
MATMUL = (torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.bmm, torch.Tensor.bmm)
DIVIDE = (torch.div, torch.Tensor.div, torch.Tensor.__truediv__, torch.true_divide)
POWER = (torch.pow, torch.Tensor.pow, torch.Tensor.__pow__)
SOFTMAXES = (F.softmax, torch.softmax, torch.Tensor.softmax)
ELEMENTWISE = (
    F.gelu, F.silu, F.relu, F.elu, F.leaky_relu, F.softplus, F.mish, F.hardswish,
    torch.tanh, torch.Tensor.tanh, torch.sigmoid, torch.Tensor.sigmoid, torch.relu,
    torch.Tensor.relu, torch.exp, torch.Tensor.exp, torch.log, torch.Tensor.log,
    torch.erf, torch.Tensor.erf, torch.rsqrt, torch.Tensor.rsqrt, torch.sqrt,
    torch.Tensor.sqrt, torch.reciprocal, torch.Tensor.reciprocal, torch.square,
    torch.Tensor.square, torch.Tensor.__rtruediv__, torch.Tensor.__rdiv__,
)  # fmt: skip
