#!/usr/bin/python3
"""Writes tests/data/nn_golden/modules.txt: PyTorch's outputs and gradients for every nn
module and loss Ember has, read by tests/nn/test_nn_golden.cpp.

A developer tool, run by hand with Debian's python3-torch (apt-get install python3-torch);
neither the build nor CI runs it or needs torch. Rerun it after adding or changing a case:

    /usr/bin/python3 tools/gen_nn_golden.py             # writes tests/data/nn_golden/modules.txt
    /usr/bin/python3 tools/gen_nn_golden.py -o FILE     # elsewhere

Each case builds one PyTorch module (a layer, a loss, or a small composite architecture),
overwrites every floating-point parameter and buffer with values drawn from a seed derived
from the case name (so adding a case changes no other), runs forward on recorded inputs in
train or eval mode, then backward with a recorded random cotangent for every floating-point
output, and records
  * the state_dict keys, and every parameter and buffer by its state_dict name, in
    named_parameters() / named_buffers() order (the C++ test checks Ember's names and order);
  * the inputs by name (the C++ builder passes each to the matching forward argument), the
    outputs in order, the cotangents, the gradients of the inputs that require grad and of
    every parameter (zeros where PyTorch's is None), and the buffers after the forward
    (BatchNorm's running statistics).
The C++ side has one builder per module type, which must read every option of the case (an
option it ignores fails the test, so the fixture and the test cannot drift apart).

Values are float64 unless the case says f32 (a few cases check the f32 path). Drawn values
(parameters, buffers, inputs, cotangents) are rounded to 4 decimals, so they are short to write
and the same number on both sides; computed ones (outputs, gradients, buffers after) are written
with 13 significant digits (f32: 9), far below the test's tolerance. Inputs are continuous
random draws, so no value sits on a kink (relu at 0, max-pool ties). Things the
tool deliberately leaves out: dropout in train mode (a different RNG cannot match bit for
bit; dropout is checked in eval mode, and the transformer and RNN cases use dropout 0), and
RMSNorm's module (not in torch 1.13: its reference is the formula written here with torch
ops, x * rsqrt(mean(x^2) + eps) * weight, eps = finfo(dtype).eps when not given).

Hardsigmoid's gradient comes from the same function written with exact ops: PyTorch's own
backward multiplies by 1/6 rounded to float even in float64 (an error of 3e-8).

The CTC case feeds logits through log_softmax before the loss: PyTorch's ctc_loss backward
returns the gradient with the softmax folded in (exp(log_probs) - posterior), which equals the
true gradient only after a log_softmax; Ember's is the plain derivative of the recursion.

File format (plain text, one record a line, '#' starts a comment line):
    ember-nn-golden 1
    case <case-name>
    module <Type> [<option>=<value> ...]    values: numbers, words, comma lists (3,3)
    dtype <f64|f32>
    mode <train|eval>
    state_keys : <key ...>
    param <name> <dtype> <ndim> <dims...> : <values...>      (named_parameters order)
    buffer <name> ...                                          (named_buffers order)
    input <name> ...                     in the order of the forward arguments
    output <index> ...
    cotangent <index> ...                one per floating-point output
    grad_input <name> ...
    grad_param <name> ...
    buffer_after <name> ...
    end
    total <number of cases>
dtype of a tensor: f64, f32, i64 or bool; values row-major, written with Python's repr
(the shortest text that reads back to the same double; -inf and inf as such).
"""

import argparse
import math
import os
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = 20240920
F64 = torch.float64


# ---- helpers used by the cases ---------------------------------------------------------------
def rn(*shape, dtype=F64, scale=1.0):
    return torch.randn(tuple(shape), dtype=dtype) * scale


def ri(high, *shape):
    return torch.randint(0, high, shape, dtype=torch.int64)


def causal_float(n):
    return torch.triu(torch.full((n, n), float("-inf"), dtype=F64), 1)


class RMSNorm(nn.Module):
    """The reference for Ember's RMSNorm (torch 1.13 has none): PyTorch 2.4's definition."""

    def __init__(self, shape, eps=None, elementwise_affine=True):
        super().__init__()
        self.shape, self.eps = tuple(shape), eps
        self.weight = nn.Parameter(torch.ones(self.shape)) if elementwise_affine else None

    def forward(self, x):
        dims = tuple(range(-len(self.shape), 0))
        eps = self.eps if self.eps is not None else torch.finfo(x.dtype).eps
        y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
        return y * self.weight if self.weight is not None else y


class ListNet(nn.Module):
    """A ModuleList of Linear layers (names layers.0.weight, ...) and a head."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 4), nn.Linear(4, 4)])
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return self.head(x)


class DictNet(nn.Module):
    """A ModuleDict (insertion order) and a ParameterList."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleDict({"encoder": nn.Linear(3, 4), "norm": nn.LayerNorm(4), "decoder": nn.Linear(4, 2)})
        self.scales = nn.ParameterList([nn.Parameter(torch.ones(2)), nn.Parameter(torch.zeros(2))])

    def forward(self, x):
        b = self.blocks
        return b["decoder"](b["norm"](b["encoder"](x))) * self.scales[0] + self.scales[1]


# ---- the cases -----------------------------------------------------------------------------
# Case(name, Type, options, make, inputs, ...): `options` are written to the fixture for the C++
# builder (PyTorch's argument names); `make` builds the PyTorch module; `inputs` draws the
# forward arguments (name -> tensor, in order); `grads` names the inputs that require grad
# (default: the first input, when it is floating point); `fwd` calls the module.
CASES = []


def case(name, typ, opts, make, inputs, grads=None, train=True, fwd=None, dtype="f64", init=None):
    CASES.append(dict(name=name, type=typ, opts=opts, make=make, inputs=inputs, grads=grads, train=train,
                      fwd=fwd, dtype=dtype, init=init))


def simple(name, typ, opts, make, shape, **kw):
    case(name, typ, opts, make, lambda: {"input": rn(*shape)}, **kw)


# Linear family
case("linear", "Linear", dict(in_features=5, out_features=3), lambda: nn.Linear(5, 3), lambda: {"input": rn(2, 4, 5)})
case("linear_nobias", "Linear", dict(in_features=4, out_features=2, bias=0), lambda: nn.Linear(4, 2, bias=False),
     lambda: {"input": rn(3, 4)})
case("linear_f32", "Linear", dict(in_features=6, out_features=4), lambda: nn.Linear(6, 4), lambda: {"input": rn(3, 6)},
     dtype="f32")
case("bilinear", "Bilinear", dict(in1_features=3, in2_features=4, out_features=2), lambda: nn.Bilinear(3, 4, 2),
     lambda: {"input1": rn(5, 3), "input2": rn(5, 4)}, grads=["input1", "input2"])
case("bilinear_nobias", "Bilinear", dict(in1_features=2, in2_features=3, out_features=2, bias=0),
     lambda: nn.Bilinear(2, 3, 2, bias=False), lambda: {"input1": rn(2, 3, 2), "input2": rn(2, 3, 3)},
     grads=["input1", "input2"])
simple("identity", "Identity", {}, lambda: nn.Identity(), (2, 3))
simple("flatten", "Flatten", {}, lambda: nn.Flatten(), (2, 3, 2, 2))
simple("flatten_range", "Flatten", dict(start_dim=0, end_dim=2), lambda: nn.Flatten(0, 2), (2, 3, 2, 2))
simple("unflatten", "Unflatten", dict(dim=1, unflattened_size=[2, 3]), lambda: nn.Unflatten(1, (2, 3)), (2, 6, 2))

# Convolutions
def conv(name, typ, shape, **o):
    cls = getattr(nn, typ)
    opts = dict(o)
    simple(name, typ, opts, lambda: cls(**o), shape)


conv("conv1d", "Conv1d", (2, 3, 9), in_channels=3, out_channels=4, kernel_size=3)
conv("conv1d_stride_pad_dil", "Conv1d", (2, 2, 11), in_channels=2, out_channels=3, kernel_size=3, stride=2, padding=2,
     dilation=2)
conv("conv1d_same_even", "Conv1d", (1, 2, 7), in_channels=2, out_channels=2, kernel_size=4, padding="same")
conv("conv1d_valid", "Conv1d", (1, 2, 7), in_channels=2, out_channels=2, kernel_size=3, padding="valid")
conv("conv1d_reflect", "Conv1d", (2, 2, 6), in_channels=2, out_channels=3, kernel_size=3, padding=2,
     padding_mode="reflect")
conv("conv1d_circular", "Conv1d", (2, 2, 6), in_channels=2, out_channels=2, kernel_size=3, padding=1,
     padding_mode="circular")
conv("conv2d", "Conv2d", (2, 3, 6, 5), in_channels=3, out_channels=4, kernel_size=3, padding=1)
conv("conv2d_rect_stride", "Conv2d", (2, 2, 7, 8), in_channels=2, out_channels=3, kernel_size=[3, 2], stride=[2, 3],
     padding=[1, 0])
conv("conv2d_dilation_nobias", "Conv2d", (1, 2, 7, 7), in_channels=2, out_channels=2, kernel_size=3, dilation=2,
     bias=False)
conv("conv2d_groups", "Conv2d", (1, 4, 5, 5), in_channels=4, out_channels=6, kernel_size=3, groups=2, padding=1)
conv("conv2d_depthwise", "Conv2d", (2, 3, 5, 6), in_channels=3, out_channels=6, kernel_size=3, groups=3)
conv("conv2d_same_dil", "Conv2d", (1, 2, 6, 6), in_channels=2, out_channels=3, kernel_size=[3, 4], padding="same",
     dilation=[2, 1])
conv("conv2d_reflect", "Conv2d", (1, 2, 5, 5), in_channels=2, out_channels=2, kernel_size=3, padding=1,
     padding_mode="reflect")
conv("conv2d_replicate", "Conv2d", (1, 2, 5, 4), in_channels=2, out_channels=2, kernel_size=3, padding=[2, 1],
     padding_mode="replicate")
conv("conv2d_circular", "Conv2d", (1, 2, 4, 5), in_channels=2, out_channels=2, kernel_size=3, padding=1,
     padding_mode="circular")
conv("conv2d_same_replicate", "Conv2d", (1, 1, 5, 5), in_channels=1, out_channels=2, kernel_size=4, padding="same",
     padding_mode="replicate")
conv("conv3d", "Conv3d", (1, 2, 4, 5, 4), in_channels=2, out_channels=3, kernel_size=3, padding=1, stride=[1, 2, 1])
conv("conv3d_groups_dil", "Conv3d", (1, 4, 5, 5, 5), in_channels=4, out_channels=2, kernel_size=2, groups=2,
     dilation=2)
conv("conv2d_f32", "Conv2d", (1, 3, 5, 5), in_channels=3, out_channels=3, kernel_size=3, padding=1)
CASES[-1]["dtype"] = "f32"
conv("convtranspose1d", "ConvTranspose1d", (2, 3, 5), in_channels=3, out_channels=2, kernel_size=3, stride=2,
     padding=1, output_padding=1)
conv("convtranspose1d_groups_dil", "ConvTranspose1d", (1, 4, 4), in_channels=4, out_channels=6, kernel_size=3,
     groups=2, dilation=2)
conv("convtranspose3d", "ConvTranspose3d", (1, 2, 2, 3, 2), in_channels=2, out_channels=3, kernel_size=[2, 3, 2],
     stride=[2, 1, 2], padding=[0, 1, 1], output_padding=[1, 0, 1])
conv("convtranspose3d_groups_dil", "ConvTranspose3d", (1, 4, 3, 2, 3), in_channels=4, out_channels=2, kernel_size=2,
     groups=2, dilation=[1, 2, 1], bias=False)
conv("convtranspose2d", "ConvTranspose2d", (2, 3, 4, 3), in_channels=3, out_channels=2, kernel_size=3, stride=2,
     padding=1, output_padding=1)
conv("convtranspose2d_groups", "ConvTranspose2d", (1, 4, 3, 3), in_channels=4, out_channels=4, kernel_size=[2, 3],
     stride=[2, 1], groups=2, bias=False)
conv("convtranspose2d_outpad_stride3", "ConvTranspose2d", (1, 2, 3, 3), in_channels=2, out_channels=2, kernel_size=2,
     stride=3, output_padding=2)


def conv_transpose_to_size(name, typ, shape, output_size, **o):
    """typ's forward(input, output_size): the output_padding chosen for the size asked for
    (output_size is passed to forward, not to the constructor)."""
    cls = getattr(nn, typ)
    case(name, typ, dict(o, output_size=output_size), lambda: cls(**o), lambda: {"input": rn(*shape)},
         fwd=lambda m, x: m(x, output_size=output_size))


conv_transpose_to_size("convtranspose2d_output_size", "ConvTranspose2d", (2, 2, 3, 4), [6, 11], in_channels=2,
                       out_channels=3, kernel_size=3, stride=[2, 3], padding=1, output_padding=0)
conv_transpose_to_size("convtranspose1d_output_size_full_shape", "ConvTranspose1d", (1, 2, 4), [1, 2, 12],
                       in_channels=2, out_channels=2, kernel_size=2, stride=3, dilation=1)
conv_transpose_to_size("convtranspose3d_output_size_unbatched", "ConvTranspose3d", (2, 2, 2, 3), [5, 3, 7],
                       in_channels=2, out_channels=1, kernel_size=2, stride=[2, 2, 3], padding=[0, 1, 1])

# Pooling
def pool(name, typ, shape, fwd=None, **o):
    cls = getattr(nn, typ)
    simple(name, typ, dict(o), lambda: cls(**o), shape, fwd=fwd)


pool("maxpool1d", "MaxPool1d", (2, 3, 9), kernel_size=3, stride=2)
pool("maxpool1d_indices_ceil_pad", "MaxPool1d", (2, 2, 10), kernel_size=3, stride=2, padding=1, ceil_mode=True,
     return_indices=True)
pool("maxpool1d_dilation", "MaxPool1d", (1, 2, 11), kernel_size=3, dilation=2, stride=1)
pool("maxpool2d", "MaxPool2d", (2, 2, 6, 6), kernel_size=2)
pool("maxpool2d_indices", "MaxPool2d", (2, 2, 7, 6), kernel_size=3, stride=2, padding=1, return_indices=True)
pool("maxpool2d_ceil", "MaxPool2d", (1, 2, 7, 7), kernel_size=[3, 2], stride=[2, 2], ceil_mode=True,
     return_indices=True)
pool("maxpool2d_dilation", "MaxPool2d", (1, 1, 8, 8), kernel_size=2, stride=2, dilation=2, padding=1)
pool("maxpool3d", "MaxPool3d", (1, 2, 4, 5, 4), kernel_size=2)
pool("maxpool3d_indices_pad_ceil", "MaxPool3d", (2, 1, 5, 4, 6), kernel_size=[3, 2, 3], stride=2, padding=1,
     ceil_mode=True, return_indices=True)
pool("maxpool3d_dilation", "MaxPool3d", (1, 1, 6, 5, 5), kernel_size=2, dilation=[2, 1, 2], stride=1)
pool("avgpool1d", "AvgPool1d", (2, 3, 8), kernel_size=3, stride=2)
pool("avgpool1d_pad_exclude", "AvgPool1d", (2, 2, 7), kernel_size=3, stride=2, padding=1, count_include_pad=False)
pool("avgpool1d_ceil", "AvgPool1d", (1, 2, 8), kernel_size=3, stride=2, padding=1, ceil_mode=True)
pool("avgpool2d", "AvgPool2d", (2, 2, 6, 6), kernel_size=2)
pool("avgpool2d_pad_include", "AvgPool2d", (1, 2, 5, 6), kernel_size=3, stride=2, padding=1)
pool("avgpool2d_pad_exclude_ceil", "AvgPool2d", (1, 2, 6, 5), kernel_size=3, stride=2, padding=1, ceil_mode=True,
     count_include_pad=False)
pool("avgpool2d_ceil_include", "AvgPool2d", (1, 1, 6, 6), kernel_size=[3, 2], stride=[2, 3], padding=[1, 1],
     ceil_mode=True)
pool("avgpool3d", "AvgPool3d", (1, 2, 4, 4, 6), kernel_size=2)
pool("avgpool2d_divisor", "AvgPool2d", (1, 2, 5, 6), kernel_size=3, stride=2, padding=1, ceil_mode=True,
     divisor_override=4)
pool("avgpool3d_divisor_negative", "AvgPool3d", (1, 1, 4, 5, 4), kernel_size=2, stride=[2, 1, 2],
     divisor_override=-3)
pool("avgpool3d_pad_exclude_ceil", "AvgPool3d", (1, 2, 5, 4, 5), kernel_size=3, stride=2, padding=1, ceil_mode=True,
     count_include_pad=False)
pool("adaptiveavgpool1d", "AdaptiveAvgPool1d", (2, 3, 7), output_size=3)
pool("adaptiveavgpool2d", "AdaptiveAvgPool2d", (2, 2, 7, 5), output_size=[3, 2])
pool("adaptiveavgpool2d_up", "AdaptiveAvgPool2d", (1, 2, 3, 3), output_size=[4, 5])
pool("adaptiveavgpool3d", "AdaptiveAvgPool3d", (1, 2, 5, 4, 3), output_size=[2, 3, 2])
pool("adaptivemaxpool1d", "AdaptiveMaxPool1d", (2, 3, 7), output_size=3)
pool("adaptivemaxpool3d", "AdaptiveMaxPool3d", (1, 2, 5, 4, 7), output_size=[2, 3, 3])
pool("adaptivemaxpool3d_divisible", "AdaptiveMaxPool3d", (1, 1, 4, 6, 2), output_size=[2, 3, 1])
pool("adaptivemaxpool2d", "AdaptiveMaxPool2d", (2, 2, 7, 5), output_size=[3, 2])
pool("adaptivemaxpool2d_divisible", "AdaptiveMaxPool2d", (1, 2, 6, 4), output_size=[3, 2])
pool("adaptivemaxpool1d_indices", "AdaptiveMaxPool1d", (2, 2, 9), output_size=4, return_indices=True)
pool("adaptivemaxpool2d_indices", "AdaptiveMaxPool2d", (1, 2, 7, 5), output_size=[3, 2], return_indices=True)
pool("adaptivemaxpool2d_indices_divisible", "AdaptiveMaxPool2d", (2, 1, 6, 4), output_size=[3, 2],
     return_indices=True)
pool("adaptivemaxpool3d_indices", "AdaptiveMaxPool3d", (1, 2, 5, 4, 3), output_size=[2, 3, 2], return_indices=True)


def unpool(name, nd, shape, kernel_size, stride=None, padding=0, output_size=None):
    """MaxUnpool{nd}d of a max pool's values and indices (the pool's input random)."""
    typ = f"MaxUnpool{nd}d"
    opts = dict(kernel_size=kernel_size, padding=padding)
    if stride is not None:
        opts["stride"] = stride
    if output_size is not None:
        opts["output_size"] = output_size

    def inputs():
        values, indices = getattr(F, f"max_pool{nd}d")(rn(*shape), kernel_size, stride, padding, return_indices=True)
        return {"input": values, "indices": indices}

    fwd = None if output_size is None else (lambda m, x, i: m(x, i, output_size=output_size))
    case(name, typ, opts, lambda: getattr(nn, typ)(kernel_size, stride, padding), inputs, grads=["input"], fwd=fwd)


unpool("maxunpool1d", 1, (2, 3, 8), 2)
unpool("maxunpool1d_overlap", 1, (1, 2, 9), 3, stride=1)
unpool("maxunpool2d", 2, (2, 2, 6, 4), 2)
unpool("maxunpool2d_pad_output_size", 2, (1, 2, 7, 6), 3, stride=2, padding=1, output_size=[7, 6])
unpool("maxunpool3d", 3, (1, 2, 4, 6, 4), [2, 3, 2])
simple("pixelunshuffle", "PixelUnshuffle", dict(downscale_factor=2), lambda: nn.PixelUnshuffle(2), (2, 3, 4, 6))


# Padding layers (torch 1.13 has no CircularPad*d, ZeroPad1d or ZeroPad3d: F.pad is their reference)
class PadRef(nn.Module):
    def __init__(self, padding, mode, value=0.0):
        super().__init__()
        self.padding, self.mode, self.value = padding, mode, value

    def forward(self, x):
        return F.pad(x, self.padding, mode=self.mode, value=self.value) if self.mode == "constant" else \
            F.pad(x, self.padding, mode=self.mode)


def padding(name, typ, shape, pad, make, value=None):
    opts = dict(padding=pad) if value is None else dict(padding=pad, value=value)
    simple(name, typ, opts, make, shape)


padding("reflectionpad1d", "ReflectionPad1d", (2, 3, 6), [2, 3], lambda: nn.ReflectionPad1d((2, 3)))
padding("reflectionpad2d", "ReflectionPad2d", (1, 2, 4, 5), [1, 2, 3, 0], lambda: nn.ReflectionPad2d((1, 2, 3, 0)))
padding("reflectionpad2d_unbatched", "ReflectionPad2d", (2, 4, 4), [2], lambda: nn.ReflectionPad2d(2))
padding("reflectionpad3d", "ReflectionPad3d", (1, 1, 3, 4, 3), [1, 1, 2, 0, 1, 2], lambda: nn.ReflectionPad3d((1, 1, 2, 0, 1, 2)))
padding("replicationpad1d", "ReplicationPad1d", (2, 2, 4), [3, 1], lambda: nn.ReplicationPad1d((3, 1)))
padding("replicationpad2d", "ReplicationPad2d", (1, 2, 3, 3), [2, 0, 1, 4], lambda: nn.ReplicationPad2d((2, 0, 1, 4)))
padding("replicationpad3d", "ReplicationPad3d", (1, 1, 2, 3, 2), [1], lambda: nn.ReplicationPad3d(1))
padding("zeropad2d", "ZeroPad2d", (1, 2, 3, 3), [1, 2, 0, 3], lambda: nn.ZeroPad2d((1, 2, 0, 3)))
padding("zeropad1d", "ZeroPad1d", (2, 3, 4), [2, 1], lambda: PadRef((2, 1), "constant"))
padding("zeropad3d_crop", "ZeroPad3d", (1, 1, 3, 3, 4), [1, -1, 0, 2, -1, 1], lambda: PadRef((1, -1, 0, 2, -1, 1), "constant"))
padding("constantpad1d", "ConstantPad1d", (2, 3, 4), [2], lambda: nn.ConstantPad1d(2, 3.5), value=3.5)
padding("constantpad2d", "ConstantPad2d", (1, 2, 3, 3), [1, 0, 2, 1], lambda: nn.ConstantPad2d((1, 0, 2, 1), -1.25),
        value=-1.25)
padding("constantpad3d", "ConstantPad3d", (1, 2, 2, 2, 2), [1, 1, 0, 1, 1, 0], lambda: nn.ConstantPad3d((1, 1, 0, 1, 1, 0), 2.0),
        value=2.0)
padding("circularpad1d", "CircularPad1d", (2, 2, 5), [2, 3], lambda: PadRef((2, 3), "circular"))
padding("circularpad2d", "CircularPad2d", (1, 2, 3, 4), [1, 2, 2, 1], lambda: PadRef((1, 2, 2, 1), "circular"))
padding("circularpad3d", "CircularPad3d", (1, 1, 3, 2, 3), [1, 1, 1, 0, 2, 1], lambda: PadRef((1, 1, 1, 0, 2, 1), "circular"))

# Across channels, power pooling, dropout variants in eval mode
class LPPool3dRef(nn.Module):
    """torch 1.13 has no LPPool3d: PyTorch 2's definition."""

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.p, self.k, self.s, self.ceil = norm_type, kernel_size, stride, ceil_mode

    def forward(self, x):
        kd, kh, kw = (self.k,) * 3 if isinstance(self.k, int) else self.k
        out = F.avg_pool3d(x.pow(self.p), self.k, self.s if self.s is not None else self.k, 0, self.ceil)
        return (torch.sign(out) * F.relu(torch.abs(out))).mul(kd * kh * kw).pow(1.0 / self.p)


simple("localresponsenorm", "LocalResponseNorm", dict(size=3), lambda: nn.LocalResponseNorm(3), (2, 5, 3, 4))
simple("localresponsenorm_3d_even_size", "LocalResponseNorm", dict(size=4, alpha=0.01, beta=0.6, k=2.0),
       lambda: nn.LocalResponseNorm(4, alpha=0.01, beta=0.6, k=2.0), (2, 6, 5))
simple("localresponsenorm_5d", "LocalResponseNorm", dict(size=2, alpha=0.1), lambda: nn.LocalResponseNorm(2, alpha=0.1),
       (1, 3, 2, 3, 2))
class ChannelShuffleRef(nn.Module):
    """nn.ChannelShuffle's forward (torch 1.13 has no derivative for it), by its definition."""

    def __init__(self, groups):
        super().__init__()
        self.g = groups

    def forward(self, x):
        n, c = x.shape[:2]
        return x.reshape(n, self.g, c // self.g, *x.shape[2:]).transpose(1, 2).reshape(x.shape)


assert torch.equal(nn.ChannelShuffle(3)(torch.arange(12.).view(1, 6, 2)), ChannelShuffleRef(3)(torch.arange(12.).view(1, 6, 2)))
simple("channelshuffle", "ChannelShuffle", dict(groups=3), lambda: ChannelShuffleRef(3), (2, 6, 2, 2))
simple("lppool1d", "LPPool1d", dict(norm_type=2.0, kernel_size=3, stride=2), lambda: nn.LPPool1d(2.0, 3, stride=2),
       (2, 3, 9))
simple("lppool2d_p3_ceil", "LPPool2d", dict(norm_type=3.0, kernel_size=[2, 3], ceil_mode=1),
       lambda: nn.LPPool2d(3.0, (2, 3), ceil_mode=True), (1, 2, 5, 7))
case("lppool3d", "LPPool3d", dict(norm_type=1.5, kernel_size=2, stride=[1, 2, 2]),
     lambda: LPPool3dRef(1.5, 2, (1, 2, 2)), lambda: {"input": torch.rand(1, 2, 3, 4, 4, dtype=F64) + 0.1})
simple("dropout1d_eval", "Dropout1d", dict(p=0.4), lambda: nn.Dropout1d(0.4), (2, 3, 4), train=False)
simple("dropout3d_eval", "Dropout3d", dict(p=0.4), lambda: nn.Dropout3d(0.4), (2, 3, 2, 2, 2), train=False)
simple("alphadropout_eval", "AlphaDropout", dict(p=0.2), lambda: nn.AlphaDropout(0.2), (3, 4), train=False)
simple("featurealphadropout_eval", "FeatureAlphaDropout", dict(p=0.2), lambda: nn.FeatureAlphaDropout(0.2),
       (2, 3, 4), train=False)

# Sampling grids: F.grid_sample and F.affine_grid through small modules (no parameters)
class GridSample(nn.Module):
    def __init__(self, mode, padding_mode, align_corners):
        super().__init__()
        self.o = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)

    def forward(self, input, grid):
        return F.grid_sample(input, grid, **self.o)


class AffineSample(nn.Module):
    """grid_sample over affine_grid(theta): the spatial transformer's sampler (out_hw: the
    output's spatial size, (H, W) or (D, H, W))."""

    def __init__(self, out_hw, align_corners):
        super().__init__()
        self.hw, self.align = out_hw, align_corners

    def forward(self, input, theta):
        grid = F.affine_grid(theta, (input.size(0), input.size(1)) + tuple(self.hw), align_corners=self.align)
        return F.grid_sample(input, grid, align_corners=self.align)


def grid_case(name, mode, padding_mode, align_corners, shape=(2, 3, 4, 5), out_hw=(3, 6), spread=1.3):
    n, nd = shape[0], len(shape) - 2
    case(name, "GridSample", dict(mode=mode, padding_mode=padding_mode, align_corners=int(align_corners)),
         lambda: GridSample(mode, padding_mode, align_corners),
         lambda: {"input": rn(*shape), "grid": (torch.rand(n, *out_hw, nd, dtype=F64) * 2 - 1) * spread},
         grads=["input", "grid"])


grid_case("gridsample_bilinear_zeros", "bilinear", "zeros", False)
grid_case("gridsample_bilinear_border_align", "bilinear", "border", True)
grid_case("gridsample_bilinear_reflection", "bilinear", "reflection", False, spread=3.0)
grid_case("gridsample_bilinear_reflection_align", "bilinear", "reflection", True, spread=3.0)
grid_case("gridsample_nearest_zeros", "nearest", "zeros", False)
grid_case("gridsample_nearest_reflection_align", "nearest", "reflection", True, spread=2.5)
grid_case("gridsample_bicubic_zeros", "bicubic", "zeros", False)
grid_case("gridsample_bicubic_border_align", "bicubic", "border", True, spread=1.6)
grid_case("gridsample_bicubic_reflection", "bicubic", "reflection", False, spread=3.0)
grid_case("gridsample_bicubic_reflection_align", "bicubic", "reflection", True, spread=3.0)
grid_case("gridsample3d_trilinear_zeros", "bilinear", "zeros", False, shape=(2, 2, 3, 4, 5), out_hw=(2, 3, 2))
grid_case("gridsample3d_trilinear_border_align", "bilinear", "border", True, shape=(1, 2, 3, 3, 4),
          out_hw=(2, 2, 3), spread=1.6)
grid_case("gridsample3d_trilinear_reflection", "bilinear", "reflection", False, shape=(1, 2, 2, 3, 4),
          out_hw=(3, 2, 2), spread=3.0)
grid_case("gridsample3d_nearest_reflection_align", "nearest", "reflection", True, shape=(1, 2, 3, 3, 2),
          out_hw=(2, 2, 2), spread=2.5)
case("affinegrid_sample", "AffineGridSample", dict(out_h=4, out_w=3, align_corners=0),
     lambda: AffineSample((4, 3), False),
     lambda: {"input": rn(2, 2, 5, 4), "theta": torch.tensor([[[0.9, -0.2, 0.1], [0.3, 1.1, -0.2]],
                                                              [[0.5, 0.4, 0.0], [-0.4, 0.6, 0.3]]], dtype=F64)},
     grads=["input", "theta"])
case("affinegrid_sample_align_single_row", "AffineGridSample", dict(out_h=1, out_w=5, align_corners=1),
     lambda: AffineSample((1, 5), True),
     lambda: {"input": rn(1, 2, 3, 3), "theta": torch.tensor([[[1.2, 0.1, -0.1], [0.2, 0.8, 0.2]]], dtype=F64)},
     grads=["input", "theta"])
case("affinegrid3d_sample", "AffineGridSample", dict(out_d=2, out_h=3, out_w=2, align_corners=0),
     lambda: AffineSample((2, 3, 2), False),
     lambda: {"input": rn(2, 2, 3, 4, 3),
              "theta": torch.tensor([[[0.9, -0.2, 0.1, 0.05], [0.3, 1.1, -0.2, 0.1], [0.1, 0.2, 0.8, -0.3]],
                                     [[0.5, 0.4, 0.0, 0.2], [-0.4, 0.6, 0.3, 0.0], [0.2, -0.1, 1.2, 0.1]]],
                                    dtype=F64)},
     grads=["input", "theta"])
case("affinegrid3d_sample_align", "AffineGridSample", dict(out_d=1, out_h=2, out_w=3, align_corners=1),
     lambda: AffineSample((1, 2, 3), True),
     lambda: {"input": rn(1, 1, 2, 3, 3),
              "theta": torch.tensor([[[1.1, 0.1, -0.1, 0.0], [0.2, 0.8, 0.2, 0.1], [0.0, 0.3, 0.9, 0.2]]],
                                    dtype=F64)},
     grads=["input", "theta"])

# Sliding blocks
simple("unfold", "Unfold", dict(kernel_size=[2, 3]), lambda: nn.Unfold((2, 3)), (2, 3, 4, 5))
simple("unfold_dilation_padding_stride", "Unfold", dict(kernel_size=3, dilation=[1, 2], padding=1, stride=[2, 1]),
       lambda: nn.Unfold(3, dilation=(1, 2), padding=1, stride=(2, 1)), (1, 2, 6, 7))
simple("fold", "Fold", dict(output_size=[4, 5], kernel_size=[2, 3]), lambda: nn.Fold((4, 5), (2, 3)), (2, 18, 9))
simple("fold_overlap_dilation_padding_stride", "Fold",
       dict(output_size=[6, 7], kernel_size=3, dilation=[1, 2], padding=1, stride=[2, 1]),
       lambda: nn.Fold((6, 7), 3, dilation=(1, 2), padding=1, stride=(2, 1)), (1, 18, 15))

# Normalisation
def norm_buffers(m):
    """Random running statistics (variance positive) so that eval mode is a real test."""
    if getattr(m, "running_mean", None) is not None:
        m.running_mean.copy_(rn(*m.running_mean.shape, dtype=m.running_mean.dtype, scale=0.5))
        m.running_var.copy_(torch.rand(*m.running_var.shape, dtype=m.running_var.dtype) + 0.5)
        m.num_batches_tracked.fill_(3)


simple("batchnorm1d_train", "BatchNorm1d", dict(num_features=3), lambda: nn.BatchNorm1d(3), (5, 3), init=norm_buffers)
simple("batchnorm1d_3d_momentum", "BatchNorm1d", dict(num_features=2, momentum=0.3, eps=1e-3),
       lambda: nn.BatchNorm1d(2, momentum=0.3, eps=1e-3), (3, 2, 4), init=norm_buffers)
simple("batchnorm1d_eval", "BatchNorm1d", dict(num_features=3), lambda: nn.BatchNorm1d(3), (4, 3), train=False,
       init=norm_buffers)
simple("batchnorm2d_train", "BatchNorm2d", dict(num_features=3), lambda: nn.BatchNorm2d(3), (2, 3, 3, 4),
       init=norm_buffers)
simple("batchnorm3d_train", "BatchNorm3d", dict(num_features=2, momentum=0.2), lambda: nn.BatchNorm3d(2, momentum=0.2),
       (3, 2, 2, 3, 2), init=norm_buffers)
simple("batchnorm3d_eval", "BatchNorm3d", dict(num_features=3), lambda: nn.BatchNorm3d(3), (2, 3, 2, 2, 3), train=False,
       init=norm_buffers)
simple("batchnorm2d_eval", "BatchNorm2d", dict(num_features=2), lambda: nn.BatchNorm2d(2), (2, 2, 3, 3), train=False,
       init=norm_buffers)
simple("batchnorm2d_noaffine", "BatchNorm2d", dict(num_features=2, affine=0), lambda: nn.BatchNorm2d(2, affine=False),
       (2, 2, 2, 3), init=norm_buffers)
simple("batchnorm2d_nostats_eval", "BatchNorm2d", dict(num_features=2, track_running_stats=0),
       lambda: nn.BatchNorm2d(2, track_running_stats=False), (2, 2, 2, 3), train=False)
simple("layernorm", "LayerNorm", dict(normalized_shape=[4]), lambda: nn.LayerNorm(4), (2, 3, 4))
simple("layernorm_2d_eps", "LayerNorm", dict(normalized_shape=[3, 4], eps=1e-3), lambda: nn.LayerNorm([3, 4], eps=1e-3),
       (2, 3, 4))
simple("layernorm_noaffine", "LayerNorm", dict(normalized_shape=[5], elementwise_affine=0),
       lambda: nn.LayerNorm(5, elementwise_affine=False), (3, 5))
simple("groupnorm", "GroupNorm", dict(num_groups=2, num_channels=4), lambda: nn.GroupNorm(2, 4), (2, 4, 3, 2))
simple("groupnorm_noaffine_eps", "GroupNorm", dict(num_groups=3, num_channels=6, eps=1e-3, affine=0),
       lambda: nn.GroupNorm(3, 6, eps=1e-3, affine=False), (2, 6, 5))
simple("rmsnorm", "RMSNorm", dict(normalized_shape=[4]), lambda: RMSNorm([4]), (2, 3, 4))
simple("rmsnorm_eps_2d", "RMSNorm", dict(normalized_shape=[2, 3], eps=1e-2), lambda: RMSNorm([2, 3], eps=1e-2),
       (3, 2, 3))
simple("rmsnorm_noaffine", "RMSNorm", dict(normalized_shape=[5], elementwise_affine=0),
       lambda: RMSNorm([5], elementwise_affine=False), (2, 5))
simple("instancenorm2d_track_train", "InstanceNorm2d", dict(num_features=3, track_running_stats=1, momentum=0.3),
       lambda: nn.InstanceNorm2d(3, track_running_stats=True, momentum=0.3), (2, 3, 4, 3), init=norm_buffers)
simple("instancenorm1d_track_eval_affine", "InstanceNorm1d", dict(num_features=2, track_running_stats=1, affine=1),
       lambda: nn.InstanceNorm1d(2, track_running_stats=True, affine=True), (3, 2, 5), train=False,
       init=norm_buffers)
simple("instancenorm1d", "InstanceNorm1d", dict(num_features=3), lambda: nn.InstanceNorm1d(3), (2, 3, 5))
simple("instancenorm3d_affine", "InstanceNorm3d", dict(num_features=2, affine=1, eps=1e-3),
       lambda: nn.InstanceNorm3d(2, affine=True, eps=1e-3), (2, 2, 3, 2, 3))
simple("instancenorm2d", "InstanceNorm2d", dict(num_features=3), lambda: nn.InstanceNorm2d(3), (2, 3, 4, 3))
simple("instancenorm2d_affine", "InstanceNorm2d", dict(num_features=2, affine=1, eps=1e-3),
       lambda: nn.InstanceNorm2d(2, affine=True, eps=1e-3), (2, 2, 3, 3))

# Embeddings
case("embedding", "Embedding", dict(num_embeddings=6, embedding_dim=3), lambda: nn.Embedding(6, 3),
     lambda: {"input": torch.tensor([[0, 2, 5, 2], [1, 1, 3, 4]])})
case("embedding_padding", "Embedding", dict(num_embeddings=5, embedding_dim=2, padding_idx=1),
     lambda: nn.Embedding(5, 2, padding_idx=1), lambda: {"input": torch.tensor([1, 0, 1, 4, 3, 1])})
case("embedding_padding_negative", "Embedding", dict(num_embeddings=5, embedding_dim=2, padding_idx=-1),
     lambda: nn.Embedding(5, 2, padding_idx=-1), lambda: {"input": torch.tensor([[4, 0], [2, 4]])})
# max_norm renormalises the rows read (in place, before the lookup); scale_grad_by_freq divides
# each row's gradient by its count in the batch. include_last_offset: the last offset is the
# input's length (torch 1.13's backward corrupts its heap when it is less; Ember refuses that).
case("embedding_max_norm", "Embedding", dict(num_embeddings=6, embedding_dim=3, max_norm=1.0),
     lambda: nn.Embedding(6, 3, max_norm=1.0), lambda: {"input": torch.tensor([[0, 2, 5, 2], [1, 1, 3, 0]])})
case("embedding_max_norm_p3_freq_padding", "Embedding",
     dict(num_embeddings=7, embedding_dim=4, max_norm=1.5, norm_type=3.0, scale_grad_by_freq=1, padding_idx=2),
     lambda: nn.Embedding(7, 4, max_norm=1.5, norm_type=3.0, scale_grad_by_freq=True, padding_idx=2),
     lambda: {"input": torch.tensor([[2, 0, 5, 5], [5, 6, 2, 0]])})
case("embedding_scale_grad_by_freq", "Embedding", dict(num_embeddings=5, embedding_dim=2, scale_grad_by_freq=1),
     lambda: nn.Embedding(5, 2, scale_grad_by_freq=True), lambda: {"input": torch.tensor([3, 3, 3, 1, 0, 1])})
# (EmbeddingBag's scale_grad_by_freq is not a case: torch 1.13 divides some rows' gradients by
# another row's count, e.g. input [1, 7, 1, 4, 4, 4, 0] gives row 7 a third of its gradient;
# tests/nn/test_functional.cpp checks Ember's against Embedding's, which torch gets right.)
case("embeddingbag_sum_max_norm", "EmbeddingBag", dict(num_embeddings=8, embedding_dim=3, mode="sum", max_norm=1.2),
     lambda: nn.EmbeddingBag(8, 3, mode="sum", max_norm=1.2),
     lambda: {"input": torch.tensor([1, 7, 1, 4, 4, 4, 0]), "offsets": torch.tensor([0, 3, 4])})
case("embeddingbag_mean_include_last_offset", "EmbeddingBag",
     dict(num_embeddings=6, embedding_dim=2, mode="mean", include_last_offset=1),
     lambda: nn.EmbeddingBag(6, 2, mode="mean", include_last_offset=True),
     lambda: {"input": torch.tensor([0, 5, 5, 1, 2, 3, 4]), "offsets": torch.tensor([0, 2, 5, 7])})
case("embeddingbag_sum_offsets", "EmbeddingBag", dict(num_embeddings=7, embedding_dim=3, mode="sum"),
     lambda: nn.EmbeddingBag(7, 3, mode="sum"),
     lambda: {"input": torch.tensor([1, 2, 4, 5, 4, 3, 2, 6]), "offsets": torch.tensor([0, 3, 3, 6])})
case("embeddingbag_mean_offsets", "EmbeddingBag", dict(num_embeddings=6, embedding_dim=2, mode="mean"),
     lambda: nn.EmbeddingBag(6, 2, mode="mean"),
     lambda: {"input": torch.tensor([0, 5, 5, 1, 2, 3]), "offsets": torch.tensor([0, 2, 5])})
case("embeddingbag_mean_2d_padding", "EmbeddingBag", dict(num_embeddings=5, embedding_dim=3, mode="mean",
                                                          padding_idx=0),
     lambda: nn.EmbeddingBag(5, 3, mode="mean", padding_idx=0),
     lambda: {"input": torch.tensor([[1, 0, 3], [0, 2, 2], [4, 4, 1]])})
case("embeddingbag_max", "EmbeddingBag", dict(num_embeddings=6, embedding_dim=3, mode="max"),
     lambda: nn.EmbeddingBag(6, 3, mode="max"),
     lambda: {"input": torch.tensor([0, 1, 2, 3, 4, 5, 2]), "offsets": torch.tensor([0, 2, 5])})
case("embeddingbag_sum_weights", "EmbeddingBag", dict(num_embeddings=5, embedding_dim=2, mode="sum"),
     lambda: nn.EmbeddingBag(5, 2, mode="sum"),
     lambda: {"input": torch.tensor([4, 1, 0, 2, 3]), "offsets": torch.tensor([0, 2]),
              "per_sample_weights": rn(5)}, grads=["per_sample_weights"])

# Recurrent
def rnn(name, typ, cls_opts, inputs, grads, **kw):
    cls = getattr(nn, typ)
    case(name, typ, dict(cls_opts), lambda: cls(**cls_opts), inputs, grads=grads, **kw)


rnn("rnn_tanh", "RNN", dict(input_size=3, hidden_size=4), lambda: {"input": rn(5, 2, 3)}, ["input"])
rnn("rnn_relu_2layer_h0", "RNN", dict(input_size=3, hidden_size=3, num_layers=2, nonlinearity="relu"),
    lambda: {"input": rn(4, 2, 3), "h0": rn(2, 2, 3)}, ["input", "h0"])
rnn("rnn_bidir_batchfirst_nobias", "RNN", dict(input_size=2, hidden_size=3, bidirectional=True, batch_first=True,
                                               bias=False),
    lambda: {"input": rn(2, 4, 2)}, ["input"])
rnn("lstm", "LSTM", dict(input_size=3, hidden_size=4), lambda: {"input": rn(5, 2, 3)}, ["input"])
rnn("lstm_2layer_bidir_states", "LSTM", dict(input_size=3, hidden_size=3, num_layers=2, bidirectional=True),
    lambda: {"input": rn(3, 2, 3), "h0": rn(4, 2, 3), "c0": rn(4, 2, 3)}, ["input", "h0", "c0"],
    fwd=lambda m, x, h, c: m(x, (h, c)))
rnn("lstm_batchfirst_unbatched", "LSTM", dict(input_size=2, hidden_size=3, batch_first=True),
    lambda: {"input": rn(5, 2)}, ["input"])
rnn("lstm_batchfirst_f32", "LSTM", dict(input_size=3, hidden_size=4, batch_first=True),
    lambda: {"input": rn(2, 5, 3, dtype=torch.float32)}, ["input"], dtype="f32")
rnn("lstm_proj_2layer_bidir_states", "LSTM", dict(input_size=3, hidden_size=4, num_layers=2, bidirectional=True,
                                                proj_size=2),
    lambda: {"input": rn(3, 2, 3), "h0": rn(4, 2, 2), "c0": rn(4, 2, 4)}, ["input", "h0", "c0"],
    fwd=lambda m, x, h, c: m(x, (h, c)))
rnn("lstm_proj_batchfirst_unbatched", "LSTM", dict(input_size=2, hidden_size=3, batch_first=True, proj_size=1),
    lambda: {"input": rn(4, 2)}, ["input"])
rnn("gru", "GRU", dict(input_size=3, hidden_size=4), lambda: {"input": rn(5, 2, 3)}, ["input"])
rnn("gru_2layer_bidir_batchfirst_h0", "GRU", dict(input_size=2, hidden_size=3, num_layers=2, bidirectional=True,
                                                 batch_first=True),
    lambda: {"input": rn(2, 4, 2), "h0": rn(4, 2, 3)}, ["input", "h0"])
rnn("rnncell", "RNNCell", dict(input_size=3, hidden_size=4), lambda: {"input": rn(2, 3), "hx": rn(2, 4)},
    ["input", "hx"])
rnn("rnncell_relu_nobias", "RNNCell", dict(input_size=3, hidden_size=2, nonlinearity="relu", bias=False),
    lambda: {"input": rn(3, 3)}, ["input"])
rnn("lstmcell", "LSTMCell", dict(input_size=3, hidden_size=4),
    lambda: {"input": rn(2, 3), "hx": rn(2, 4), "cx": rn(2, 4)}, ["input", "hx", "cx"],
    fwd=lambda m, x, h, c: m(x, (h, c)))
rnn("lstmcell_zero_state", "LSTMCell", dict(input_size=2, hidden_size=3), lambda: {"input": rn(3, 2)}, ["input"])
rnn("grucell", "GRUCell", dict(input_size=3, hidden_size=4), lambda: {"input": rn(2, 3), "hx": rn(2, 4)},
    ["input", "hx"])


def packed_rnn(name, typ, cls_opts, lengths, shape, state=(), enforce_sorted=True, total_length=None):
    """typ over a padded batch packed by `lengths` (pack_padded_sequence), its output padded back
    (pad_packed_sequence); outputs: the padded output and the final state(s)."""
    batch_first = cls_opts.get("batch_first", False)
    opts = dict(cls_opts, packed=1, enforce_sorted=int(enforce_sorted))
    if total_length is not None:
        opts["total_length"] = total_length
    cls = getattr(nn, typ)

    def inputs():
        d = {"input": rn(*shape), "lengths": torch.tensor(lengths)}
        for k, s in state:
            d[k] = rn(*s)
        return d

    def fwd(m, x, lens, *st):
        packed = nn.utils.rnn.pack_padded_sequence(x, lens, batch_first=batch_first, enforce_sorted=enforce_sorted)
        if typ == "LSTM":
            out, (h, c) = m(packed, tuple(st) if st else None)
            rest = (h, c)
        else:
            out, h = m(packed, st[0] if st else None)
            rest = (h,)
        y, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=batch_first, total_length=total_length)
        return (y,) + rest

    case(name, typ, opts, lambda: cls(**cls_opts), inputs, grads=["input"] + [k for k, _ in state], fwd=fwd)


packed_rnn("lstm_packed_unsorted_2layer_bidir_states", "LSTM",
           dict(input_size=3, hidden_size=4, num_layers=2, bidirectional=True), [3, 5, 1, 4], (5, 4, 3),
           state=[("h0", (4, 4, 4)), ("c0", (4, 4, 4))], enforce_sorted=False)
packed_rnn("lstm_proj_packed_unsorted_bidir_states", "LSTM",
           dict(input_size=2, hidden_size=3, bidirectional=True, proj_size=2), [2, 4, 3], (4, 3, 2),
           state=[("h0", (2, 3, 2)), ("c0", (2, 3, 3))], enforce_sorted=False)
packed_rnn("gru_packed_sorted_batchfirst_total_length", "GRU", dict(input_size=2, hidden_size=3, batch_first=True),
           [4, 2, 2], (3, 4, 2), total_length=6)
packed_rnn("rnn_packed_relu_bidir_unsorted", "RNN", dict(input_size=2, hidden_size=3, nonlinearity="relu",
                                                         bidirectional=True),
           [2, 4, 3], (4, 3, 2), state=[("h0", (2, 3, 3))], enforce_sorted=False)

# Attention and transformers (train mode with dropout 0: no fast path, nothing random)
def mha_fwd(need_weights=True, average=True):
    def f(m, q, k, v, key_padding_mask=None, attn_mask=None):
        return m(q, k, v, key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
                 average_attn_weights=average)
    return f


def kpm(n, s, masked):
    m = torch.zeros(n, s, dtype=torch.bool)
    for b, j in masked:
        m[b, j] = True
    return m


case("mha", "MultiheadAttention", dict(embed_dim=6, num_heads=2), lambda: nn.MultiheadAttention(6, 2),
     lambda: {"query": rn(4, 2, 6), "key": rn(5, 2, 6), "value": rn(5, 2, 6)}, grads=["query", "key", "value"],
     fwd=lambda m, q, k, v: mha_fwd()(m, q, k, v))
case("mha_masks_per_head_weights", "MultiheadAttention",
     dict(embed_dim=4, num_heads=2, average_attn_weights=0),
     lambda: nn.MultiheadAttention(4, 2),
     lambda: {"query": rn(3, 2, 4), "key": rn(3, 2, 4), "value": rn(3, 2, 4),
              "key_padding_mask": kpm(2, 3, [(0, 2), (1, 1)]), "attn_mask": causal_float(3)},
     grads=["query", "key", "value"], fwd=mha_fwd(average=False))
case("mha_batchfirst_boolmask_nobias", "MultiheadAttention",
     dict(embed_dim=4, num_heads=1, batch_first=1, bias=0, need_weights=0),
     lambda: nn.MultiheadAttention(4, 1, batch_first=True, bias=False),
     lambda: {"query": rn(2, 3, 4), "key": rn(2, 5, 4), "value": rn(2, 5, 4),
              "attn_mask": torch.tensor([[False, True, False, False, True], [False, False, True, False, False],
                                         [True, False, False, True, False]])},
     grads=["query", "key", "value"], fwd=lambda m, q, k, v, attn_mask: mha_fwd(need_weights=False)(
         m, q, k, v, attn_mask=attn_mask))
case("mha_3d_mask", "MultiheadAttention", dict(embed_dim=4, num_heads=2),
     lambda: nn.MultiheadAttention(4, 2),
     lambda: {"query": rn(3, 2, 4), "key": rn(3, 2, 4), "value": rn(3, 2, 4), "attn_mask": rn(4, 3, 3)},
     grads=["query", "key", "value"], fwd=lambda m, q, k, v, attn_mask: mha_fwd()(m, q, k, v, attn_mask=attn_mask))
case("mha_bias_kv_zero_attn_masks", "MultiheadAttention",
     dict(embed_dim=4, num_heads=2, add_bias_kv=1, add_zero_attn=1, average_attn_weights=0),
     lambda: nn.MultiheadAttention(4, 2, add_bias_kv=True, add_zero_attn=True),
     lambda: {"query": rn(3, 2, 4), "key": rn(2, 2, 4), "value": rn(2, 2, 4),
              "key_padding_mask": kpm(2, 2, [(0, 1), (1, 0), (1, 1)]), "attn_mask": rn(3, 2)},
     grads=["query", "key", "value"], fwd=mha_fwd(average=False))
case("mha_bias_kv_self_batchfirst", "MultiheadAttention", dict(embed_dim=6, num_heads=3, add_bias_kv=1, batch_first=1),
     lambda: nn.MultiheadAttention(6, 3, add_bias_kv=True, batch_first=True),
     lambda: {"query": rn(2, 4, 6)}, grads=["query"], fwd=lambda m, q: mha_fwd()(m, q, q, q))
case("mha_zero_attn_kdim", "MultiheadAttention", dict(embed_dim=4, num_heads=1, kdim=3, vdim=3, add_zero_attn=1),
     lambda: nn.MultiheadAttention(4, 1, kdim=3, vdim=3, add_zero_attn=True),
     lambda: {"query": rn(2, 1, 4), "key": rn(3, 1, 3), "value": rn(3, 1, 3)}, grads=["query", "key", "value"],
     fwd=lambda m, q, k, v: mha_fwd()(m, q, k, v))

TL = dict(d_model=4, nhead=2, dim_feedforward=6, dropout=0.0)


def enc_layer(**o):
    return nn.TransformerEncoderLayer(**{**TL, **o})


def dec_layer(**o):
    return nn.TransformerDecoderLayer(**{**TL, **o})


case("encoderlayer_post_relu", "TransformerEncoderLayer", dict(TL), lambda: enc_layer(),
     lambda: {"src": rn(4, 2, 4)}, fwd=lambda m, src: m(src))
case("encoderlayer_pre_gelu_masks", "TransformerEncoderLayer", dict(TL, norm_first=1, activation="gelu"),
     lambda: enc_layer(norm_first=True, activation="gelu"),
     lambda: {"src": rn(4, 2, 4), "src_mask": causal_float(4), "src_key_padding_mask": kpm(2, 4, [(1, 3)])},
     fwd=lambda m, src, mask, kp: m(src, src_mask=mask, src_key_padding_mask=kp))
case("encoderlayer_batchfirst_eps", "TransformerEncoderLayer", dict(TL, batch_first=1, layer_norm_eps=1e-3),
     lambda: enc_layer(batch_first=True, layer_norm_eps=1e-3), lambda: {"src": rn(2, 3, 4)})
case("decoderlayer_post_relu", "TransformerDecoderLayer", dict(TL), lambda: dec_layer(),
     lambda: {"tgt": rn(3, 2, 4), "memory": rn(4, 2, 4), "tgt_mask": causal_float(3)}, grads=["tgt", "memory"],
     fwd=lambda m, t, mem, tm: m(t, mem, tgt_mask=tm))
case("decoderlayer_pre_gelu_masks", "TransformerDecoderLayer", dict(TL, norm_first=1, activation="gelu"),
     lambda: dec_layer(norm_first=True, activation="gelu"),
     lambda: {"tgt": rn(3, 2, 4), "memory": rn(4, 2, 4), "tgt_mask": causal_float(3),
              "memory_mask": rn(3, 4, scale=0.5), "tgt_key_padding_mask": kpm(2, 3, [(0, 2)]),
              "memory_key_padding_mask": kpm(2, 4, [(1, 1), (1, 3)])},
     grads=["tgt", "memory"],
     fwd=lambda m, t, mem, tm, mm, tkp, mkp: m(t, mem, tgt_mask=tm, memory_mask=mm, tgt_key_padding_mask=tkp,
                                               memory_key_padding_mask=mkp))
case("encoder_2layer_norm", "TransformerEncoder", dict(TL, num_layers=2, norm=1),
     lambda: nn.TransformerEncoder(enc_layer(), 2, norm=nn.LayerNorm(4)),
     lambda: {"src": rn(4, 2, 4), "mask": causal_float(4)}, fwd=lambda m, src, mask: m(src, mask=mask))
case("encoder_prenorm_nonorm", "TransformerEncoder", dict(TL, num_layers=2, norm_first=1, activation="gelu"),
     lambda: nn.TransformerEncoder(enc_layer(norm_first=True, activation="gelu"), 2),
     lambda: {"src": rn(3, 1, 4), "src_key_padding_mask": kpm(1, 3, [(0, 1)])},
     fwd=lambda m, src, kp: m(src, src_key_padding_mask=kp))
case("decoder_1layer_norm", "TransformerDecoder", dict(TL, num_layers=1, norm=1),
     lambda: nn.TransformerDecoder(dec_layer(), 1, norm=nn.LayerNorm(4)),
     lambda: {"tgt": rn(3, 2, 4), "memory": rn(4, 2, 4)}, grads=["tgt", "memory"])
case("transformer", "Transformer", dict(d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                                        dim_feedforward=6, dropout=0.0),
     lambda: nn.Transformer(d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=6,
                            dropout=0.0),
     lambda: {"src": rn(4, 2, 4), "tgt": rn(3, 2, 4), "tgt_mask": causal_float(3),
              "src_key_padding_mask": kpm(2, 4, [(0, 3)]), "memory_key_padding_mask": kpm(2, 4, [(0, 3)])},
     grads=["src", "tgt"],
     fwd=lambda m, s, t, tm, skp, mkp: m(s, t, tgt_mask=tm, src_key_padding_mask=skp, memory_key_padding_mask=mkp))
case("transformer_batchfirst_prenorm_gelu", "Transformer",
     dict(d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=6, dropout=0.0,
          batch_first=1, norm_first=1, activation="gelu"),
     lambda: nn.Transformer(d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=6,
                            dropout=0.0, batch_first=True, norm_first=True, activation="gelu"),
     lambda: {"src": rn(2, 3, 4), "tgt": rn(2, 2, 4)}, grads=["src", "tgt"])

# Resampling
simple("upsample_nearest_scale", "Upsample", dict(scale_factor=2.0, mode="nearest"),
       lambda: nn.Upsample(scale_factor=2, mode="nearest"), (1, 2, 3, 2))
simple("upsample_nearest_size", "Upsample", dict(size=[5, 7], mode="nearest"),
       lambda: nn.Upsample(size=(5, 7), mode="nearest"), (1, 2, 3, 4))
simple("upsample_bilinear", "Upsample", dict(scale_factor=2.0, mode="bilinear", align_corners=0),
       lambda: nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False), (1, 2, 3, 3))
simple("upsample_bilinear_align", "Upsample", dict(size=[5, 4], mode="bilinear", align_corners=1),
       lambda: nn.Upsample(size=(5, 4), mode="bilinear", align_corners=True), (2, 1, 3, 3))
simple("upsample_bilinear_fractional_scale", "Upsample", dict(scale_factor=1.5, mode="bilinear", align_corners=0),
       lambda: nn.Upsample(scale_factor=1.5, mode="bilinear", align_corners=False), (1, 1, 5, 3))
simple("upsample_bilinear_recompute", "Upsample",
       dict(scale_factor=1.7, mode="bilinear", align_corners=0, recompute_scale_factor=1),
       lambda: nn.Upsample(scale_factor=1.7, mode="bilinear", align_corners=False, recompute_scale_factor=True),
       (1, 2, 4, 3))
simple("upsample_nearest_exact", "Upsample", dict(scale_factor=1.5, mode="nearest-exact"),
       lambda: nn.Upsample(scale_factor=1.5, mode="nearest-exact"), (1, 1, 4, 5))
simple("upsample_area_size", "Upsample", dict(size=[2, 3], mode="area"), lambda: nn.Upsample(size=(2, 3), mode="area"),
       (1, 2, 5, 7))
simple("upsample_nearest_fractional_scale", "Upsample", dict(scale_factor=1.7, mode="nearest"),
       lambda: nn.Upsample(scale_factor=1.7, mode="nearest"), (1, 1, 5, 3))
simple("upsample_linear_1d", "Upsample", dict(scale_factor=2.5, mode="linear", align_corners=0),
       lambda: nn.Upsample(scale_factor=2.5, mode="linear", align_corners=False), (2, 2, 4))
simple("upsample_bicubic", "Upsample", dict(size=[5, 7], mode="bicubic", align_corners=0),
       lambda: nn.Upsample(size=(5, 7), mode="bicubic", align_corners=False), (1, 2, 3, 4))
simple("upsample_bicubic_align_f32", "Upsample", dict(scale_factor=1.7, mode="bicubic", align_corners=1),
       lambda: nn.Upsample(scale_factor=1.7, mode="bicubic", align_corners=True), (1, 1, 4, 3), dtype="f32")
simple("upsample_trilinear", "Upsample", dict(size=[3, 4, 5], mode="trilinear", align_corners=0),
       lambda: nn.Upsample(size=(3, 4, 5), mode="trilinear", align_corners=False), (1, 2, 2, 3, 2))
simple("upsample_nearest_3d", "Upsample", dict(scale_factor=2.0, mode="nearest"),
       lambda: nn.Upsample(scale_factor=2, mode="nearest"), (1, 1, 2, 3, 2))


class Interpolate(nn.Module):
    """F.interpolate as a module without parameters, for the cases of options Upsample lacks."""

    def __init__(self, **kw):
        super().__init__()
        self.kw = kw

    def forward(self, x):
        return F.interpolate(x, **self.kw)


def interp(name, shape, dtype="f64", **o):
    """F.interpolate(input, **o); booleans are written 0/1, lists as comma lists."""
    simple(name, "Interpolate", dict(o), lambda: Interpolate(**o), shape, dtype=dtype)


interp("interp_nearest_exact_1d", (2, 1, 7), size=[4], mode="nearest-exact")
interp("interp_nearest_exact_scale_f32", (1, 2, 5, 3), scale_factor=[1.7, 2.3], mode="nearest-exact", dtype="f32")
interp("interp_nearest_1d_scale", (1, 2, 5), scale_factor=[0.7], mode="nearest")
interp("interp_linear_align", (1, 2, 4), size=[9], mode="linear", align_corners=True)
interp("interp_linear_shrink_f32", (1, 1, 9), size=[4], mode="linear", dtype="f32")
interp("interp_bilinear_per_dim_scale", (1, 1, 4, 5), scale_factor=[1.5, 0.6], mode="bilinear")
interp("interp_bicubic_shrink", (1, 2, 7, 6), size=[3, 4], mode="bicubic")
# W keeps its size but the factor 1.1 still moves its pixels. (Not both dims the same size:
# PyTorch 1.13's bicubic backward then copies the gradient while its forward resamples.)
interp("interp_bicubic_same_size_scale", (1, 1, 3, 5), scale_factor=[1.4, 1.1], mode="bicubic")
interp("interp_bicubic_recompute_f32", (1, 1, 4, 4), scale_factor=[1.3, 2.6], mode="bicubic",
       recompute_scale_factor=True, dtype="f32")
interp("interp_bilinear_aa_shrink", (1, 2, 9, 7), size=[4, 3], mode="bilinear", antialias=True)
interp("interp_bilinear_aa_grow_f32", (1, 1, 3, 4), size=[5, 7], mode="bilinear", antialias=True, dtype="f32")
interp("interp_bilinear_aa_scale", (1, 1, 5, 8), scale_factor=[1.0, 0.45], mode="bilinear", antialias=True)
interp("interp_bicubic_aa_shrink", (1, 2, 11, 8), size=[4, 3], mode="bicubic", antialias=True)
interp("interp_bicubic_aa_shrink_f32", (1, 1, 10, 9), size=[3, 5], mode="bicubic", antialias=True, dtype="f32")
interp("interp_bicubic_aa_align", (1, 1, 9, 6), size=[4, 4], mode="bicubic", antialias=True, align_corners=True)
interp("interp_trilinear_align_scale", (1, 1, 2, 3, 3), scale_factor=[2.0, 1.5, 0.7], mode="trilinear",
       align_corners=True)
interp("interp_area_1d", (2, 2, 7), size=[3], mode="area")
interp("interp_area_2d", (1, 2, 7, 5), size=[3, 2], mode="area")
interp("interp_area_3d", (1, 2, 5, 4, 7), size=[2, 3, 3], mode="area")
interp("interp_nearest_exact_3d", (1, 1, 3, 4, 2), size=[5, 3, 3], mode="nearest-exact")
simple("pixelshuffle", "PixelShuffle", dict(upscale_factor=2), lambda: nn.PixelShuffle(2), (2, 8, 2, 3))

# Activations (and dropout in eval mode: the identity)
for typ in ["ReLU", "ReLU6", "SELU", "SiLU", "Mish", "Sigmoid", "Tanh", "Softsign", "Hardsigmoid", "Hardswish",
            "LogSigmoid", "Tanhshrink"]:
    simple(typ.lower(), typ, {}, getattr(nn, typ), (3, 5), init=None)
    CASES[-1]["inputs"] = lambda: {"input": rn(3, 5, scale=3.0)}  # reach the saturated pieces too


def hardsigmoid_fwd(m, x):
    """PyTorch's hardsigmoid backward multiplies by 1/6 rounded to float even for float64 (its
    CPU kernel writes scalar_t(1.0f / 6.0f)), an error of 3e-8; the same function written with
    exact ops gives the true gradient. The module's own output is checked against it first."""
    y = F.relu6(x + 3) / 6
    assert torch.equal(m(x), y)
    return y


CASES[[c["name"] for c in CASES].index("hardsigmoid")]["fwd"] = hardsigmoid_fwd
simple("leakyrelu", "LeakyReLU", dict(negative_slope=0.2), lambda: nn.LeakyReLU(0.2), (3, 4))
simple("elu", "ELU", dict(alpha=0.7), lambda: nn.ELU(alpha=0.7), (3, 4))
simple("celu", "CELU", dict(alpha=1.5), lambda: nn.CELU(alpha=1.5), (3, 4))
simple("gelu", "GELU", {}, lambda: nn.GELU(), (3, 4))
simple("gelu_tanh", "GELU", dict(approximate="tanh"), lambda: nn.GELU(approximate="tanh"), (3, 4))
case("softplus", "Softplus", dict(beta=2.0, threshold=3.0), lambda: nn.Softplus(beta=2.0, threshold=3.0),
     lambda: {"input": rn(4, 5, scale=3.0)})
simple("hardtanh", "Hardtanh", dict(min_val=-0.5, max_val=1.5), lambda: nn.Hardtanh(-0.5, 1.5), (4, 5))
simple("softmax", "Softmax", dict(dim=1), lambda: nn.Softmax(dim=1), (2, 3, 4))
simple("softmax_neg_dim", "Softmax", dict(dim=-1), lambda: nn.Softmax(dim=-1), (2, 3, 4))
simple("logsoftmax", "LogSoftmax", dict(dim=0), lambda: nn.LogSoftmax(dim=0), (3, 4))
simple("hardshrink", "Hardshrink", dict(lambd=0.7), lambda: nn.Hardshrink(0.7), (4, 5))
simple("softshrink", "Softshrink", {}, lambda: nn.Softshrink(), (4, 5))
simple("threshold", "Threshold", dict(threshold=0.2, value=-1.5), lambda: nn.Threshold(0.2, -1.5), (4, 5))
simple("prelu", "PReLU", {}, lambda: nn.PReLU(), (3, 4))
simple("prelu_channels", "PReLU", dict(num_parameters=3, init=0.1), lambda: nn.PReLU(3, init=0.1), (2, 3, 2, 2))
simple("glu", "GLU", {}, lambda: nn.GLU(), (3, 4))
simple("glu_dim1", "GLU", dict(dim=1), lambda: nn.GLU(dim=1), (2, 6, 2))
simple("softmin", "Softmin", dict(dim=1), lambda: nn.Softmin(dim=1), (2, 4, 3))
simple("dropout_eval", "Dropout", dict(p=0.5), lambda: nn.Dropout(0.5), (3, 4), train=False)
simple("dropout2d_eval", "Dropout2d", dict(p=0.3), lambda: nn.Dropout2d(0.3), (2, 3, 2, 2), train=False)

# Losses. Inputs: (input, target) or the three-argument forms, by PyTorch's names.
def loss(name, typ, opts, make, inputs, grads=None, fwd=None):
    case(name, typ, opts, make, inputs, grads=grads, fwd=fwd)


for red in ["mean", "sum", "none"]:
    loss(f"mseloss_{red}", "MSELoss", dict(reduction=red), lambda red=red: nn.MSELoss(reduction=red),
         lambda: {"input": rn(3, 4), "target": rn(3, 4)})
loss("l1loss", "L1Loss", {}, lambda: nn.L1Loss(), lambda: {"input": rn(3, 4), "target": rn(3, 4)},
     grads=["input", "target"])
loss("l1loss_sum", "L1Loss", dict(reduction="sum"), lambda: nn.L1Loss(reduction="sum"),
     lambda: {"input": rn(5), "target": rn(5)})
loss("smoothl1loss_beta", "SmoothL1Loss", dict(beta=0.5), lambda: nn.SmoothL1Loss(beta=0.5),
     lambda: {"input": rn(4, 4), "target": rn(4, 4)}, grads=["input", "target"])
loss("smoothl1loss_none", "SmoothL1Loss", dict(reduction="none"), lambda: nn.SmoothL1Loss(reduction="none"),
     lambda: {"input": rn(3, 4, scale=2.0), "target": rn(3, 4)})
loss("huberloss_delta", "HuberLoss", dict(delta=0.7, reduction="sum"), lambda: nn.HuberLoss(delta=0.7, reduction="sum"),
     lambda: {"input": rn(4, 4, scale=2.0), "target": rn(4, 4)}, grads=["input", "target"])
loss("huberloss", "HuberLoss", {}, lambda: nn.HuberLoss(), lambda: {"input": rn(3, 4, scale=2.0), "target": rn(3, 4)})

CE_W = lambda: torch.rand(4, dtype=F64) + 0.5  # noqa: E731
for red in ["mean", "sum", "none"]:
    loss(f"crossentropy_{red}", "CrossEntropyLoss", dict(reduction=red),
         lambda red=red: nn.CrossEntropyLoss(reduction=red), lambda: {"input": rn(5, 4), "target": ri(4, 5)})
loss("crossentropy_weight_ignore", "CrossEntropyLoss", dict(ignore_index=2),
     lambda: nn.CrossEntropyLoss(weight=CE_W(), ignore_index=2),
     lambda: {"input": rn(6, 4), "target": torch.tensor([0, 2, 3, 1, 2, 3])})
loss("crossentropy_smoothing_weight_ignore", "CrossEntropyLoss", dict(ignore_index=1, label_smoothing=0.2),
     lambda: nn.CrossEntropyLoss(weight=CE_W(), ignore_index=1, label_smoothing=0.2),
     lambda: {"input": rn(6, 4), "target": torch.tensor([0, 1, 3, 2, 1, 3])})
loss("crossentropy_smoothing_sum", "CrossEntropyLoss", dict(label_smoothing=0.1, reduction="sum"),
     lambda: nn.CrossEntropyLoss(label_smoothing=0.1, reduction="sum"),
     lambda: {"input": rn(5, 4), "target": ri(4, 5)})
loss("crossentropy_smoothing_none_ignore", "CrossEntropyLoss", dict(label_smoothing=0.3, reduction="none",
                                                                    ignore_index=0),
     lambda: nn.CrossEntropyLoss(label_smoothing=0.3, reduction="none", ignore_index=0),
     lambda: {"input": rn(5, 4), "target": torch.tensor([0, 1, 2, 3, 0])})
loss("crossentropy_spatial", "CrossEntropyLoss", {}, lambda: nn.CrossEntropyLoss(),
     lambda: {"input": rn(2, 4, 3, 2), "target": ri(4, 2, 3, 2)})
loss("crossentropy_unbatched", "CrossEntropyLoss", {}, lambda: nn.CrossEntropyLoss(),
     lambda: {"input": rn(4), "target": torch.tensor(2)})
loss("crossentropy_probs", "CrossEntropyLoss", {}, lambda: nn.CrossEntropyLoss(),
     lambda: {"input": rn(5, 4), "target": torch.softmax(rn(5, 4), 1)}, grads=["input", "target"])
loss("crossentropy_probs_weight_smoothing_sum", "CrossEntropyLoss", dict(label_smoothing=0.25, reduction="sum"),
     lambda: nn.CrossEntropyLoss(weight=CE_W(), label_smoothing=0.25, reduction="sum"),
     lambda: {"input": rn(3, 4), "target": torch.softmax(rn(3, 4), 1)})
loss("crossentropy_probs_spatial_none", "CrossEntropyLoss", dict(reduction="none"),
     lambda: nn.CrossEntropyLoss(reduction="none"),
     lambda: {"input": rn(2, 4, 3), "target": torch.softmax(rn(2, 4, 3), 1)})
loss("nllloss", "NLLLoss", {}, lambda: nn.NLLLoss(),
     lambda: {"input": torch.log_softmax(rn(5, 3), 1), "target": ri(3, 5)})
loss("nllloss_weight_ignore_sum", "NLLLoss", dict(ignore_index=1, reduction="sum"),
     lambda: nn.NLLLoss(weight=torch.rand(3, dtype=F64) + 0.5, ignore_index=1, reduction="sum"),
     lambda: {"input": torch.log_softmax(rn(5, 3), 1), "target": torch.tensor([0, 1, 2, 1, 0])})
loss("nllloss_weight_mean_spatial", "NLLLoss", {},
     lambda: nn.NLLLoss(weight=torch.rand(3, dtype=F64) + 0.5),
     lambda: {"input": torch.log_softmax(rn(2, 3, 4), 1), "target": ri(3, 2, 4)})
loss("bceloss", "BCELoss", {}, lambda: nn.BCELoss(),
     lambda: {"input": torch.sigmoid(rn(3, 4)), "target": torch.rand(3, 4, dtype=F64)}, grads=["input", "target"])
loss("bceloss_weight_sum", "BCELoss", dict(reduction="sum"),
     lambda: nn.BCELoss(weight=torch.rand(4, dtype=F64) + 0.5, reduction="sum"),
     lambda: {"input": torch.sigmoid(rn(3, 4)), "target": torch.randint(0, 2, (3, 4)).to(F64)})
loss("bcewithlogits", "BCEWithLogitsLoss", {}, lambda: nn.BCEWithLogitsLoss(),
     lambda: {"input": rn(3, 4, scale=3.0), "target": torch.rand(3, 4, dtype=F64)}, grads=["input", "target"])
loss("bcewithlogits_posweight_weight_none", "BCEWithLogitsLoss", dict(reduction="none"),
     lambda: nn.BCEWithLogitsLoss(weight=torch.rand(4, dtype=F64) + 0.5, pos_weight=torch.rand(4, dtype=F64) * 3,
                                  reduction="none"),
     lambda: {"input": rn(3, 4, scale=3.0), "target": torch.rand(3, 4, dtype=F64)}, grads=["input", "target"])
loss("kldiv_batchmean", "KLDivLoss", dict(reduction="batchmean"), lambda: nn.KLDivLoss(reduction="batchmean"),
     lambda: {"input": torch.log_softmax(rn(3, 4), 1), "target": torch.softmax(rn(3, 4), 1)},
     grads=["input", "target"])
loss("kldiv_log_target_sum", "KLDivLoss", dict(reduction="sum", log_target=1),
     lambda: nn.KLDivLoss(reduction="sum", log_target=True),
     lambda: {"input": torch.log_softmax(rn(3, 4), 1), "target": torch.log_softmax(rn(3, 4), 1)},
     grads=["input", "target"])
loss("kldiv_mean_zero_target", "KLDivLoss", {}, lambda: nn.KLDivLoss(),
     lambda: {"input": torch.log_softmax(rn(2, 3), 1), "target": torch.tensor([[0.5, 0.0, 0.5], [0.2, 0.3, 0.5]],
                                                                             dtype=F64)})
loss("cosineembedding", "CosineEmbeddingLoss", dict(margin=0.2),
     lambda: nn.CosineEmbeddingLoss(margin=0.2),
     lambda: {"input1": rn(6, 4), "input2": rn(6, 4), "target": torch.tensor([1., -1, 1, -1, -1, 1], dtype=F64)},
     grads=["input1", "input2"])
loss("cosineembedding_none", "CosineEmbeddingLoss", dict(reduction="none"),
     lambda: nn.CosineEmbeddingLoss(reduction="none"),
     lambda: {"input1": rn(4, 3), "input2": rn(4, 3), "target": torch.tensor([1., -1, -1, 1], dtype=F64)},
     grads=["input1", "input2"])
loss("marginranking", "MarginRankingLoss", dict(margin=0.3),
     lambda: nn.MarginRankingLoss(margin=0.3),
     lambda: {"input1": rn(6), "input2": rn(6), "target": torch.tensor([1., -1, 1, 1, -1, -1], dtype=F64)},
     grads=["input1", "input2"])
loss("tripletmargin", "TripletMarginLoss", dict(margin=1.5),
     lambda: nn.TripletMarginLoss(margin=1.5),
     lambda: {"anchor": rn(5, 4), "positive": rn(5, 4), "negative": rn(5, 4)},
     grads=["anchor", "positive", "negative"])
loss("tripletmargin_p1_swap_sum", "TripletMarginLoss", dict(margin=2.0, p=1.0, swap=1, reduction="sum"),
     lambda: nn.TripletMarginLoss(margin=2.0, p=1.0, swap=True, reduction="sum"),
     lambda: {"anchor": rn(5, 3), "positive": rn(5, 3), "negative": rn(5, 3)},
     grads=["anchor", "positive", "negative"])


def ctc_fwd(m, logits, targets, input_lengths, target_lengths):
    return m(logits.log_softmax(2), targets, input_lengths, target_lengths)


loss("ctc_mean", "CTCLoss", {}, lambda: nn.CTCLoss(),
     lambda: {"logits": rn(6, 2, 5), "targets": torch.tensor([[1, 2, 2], [3, 1, 0]]),
              "input_lengths": torch.tensor([6, 5]), "target_lengths": torch.tensor([3, 2])}, fwd=ctc_fwd)
loss("ctc_sum_blank_concat", "CTCLoss", dict(blank=4, reduction="sum"), lambda: nn.CTCLoss(blank=4, reduction="sum"),
     lambda: {"logits": rn(5, 3, 5), "targets": torch.tensor([0, 1, 2, 2, 3, 1]),
              "input_lengths": torch.tensor([5, 4, 5]), "target_lengths": torch.tensor([2, 1, 3])}, fwd=ctc_fwd)
loss("ctc_none_zero_infinity", "CTCLoss", dict(reduction="none", zero_infinity=1),
     lambda: nn.CTCLoss(reduction="none", zero_infinity=True),
     lambda: {"logits": rn(4, 2, 4), "targets": torch.tensor([[1, 1, 2], [2, 3, 0]]),
              "input_lengths": torch.tensor([4, 1]), "target_lengths": torch.tensor([3, 2])}, fwd=ctc_fwd)

# Margin, multi-label and likelihood losses
def signs(*shape):
    return torch.randint(0, 2, shape).to(F64) * 2 - 1


def cosine_distance(a, b):
    return 1.0 - F.cosine_similarity(a, b)


loss("softmargin", "SoftMarginLoss", {}, lambda: nn.SoftMarginLoss(),
     lambda: {"input": rn(3, 4, scale=2.0), "target": signs(3, 4)})
loss("softmargin_none", "SoftMarginLoss", dict(reduction="none"), lambda: nn.SoftMarginLoss(reduction="none"),
     lambda: {"input": rn(5), "target": signs(5)})
loss("hingeembedding", "HingeEmbeddingLoss", dict(margin=0.5), lambda: nn.HingeEmbeddingLoss(margin=0.5),
     lambda: {"input": rn(3, 4), "target": signs(3, 4)})
loss("hingeembedding_sum_other_labels", "HingeEmbeddingLoss", dict(reduction="sum"),
     lambda: nn.HingeEmbeddingLoss(reduction="sum"),
     lambda: {"input": rn(6), "target": torch.tensor([1., -1, 0, 2, -1, 1], dtype=F64)})
loss("multimargin", "MultiMarginLoss", {}, lambda: nn.MultiMarginLoss(),
     lambda: {"input": rn(4, 5), "target": ri(5, 4)})
loss("multimargin_p2_weight_none", "MultiMarginLoss", dict(p=2, margin=0.7, reduction="none"),
     lambda: nn.MultiMarginLoss(p=2, margin=0.7, weight=torch.rand(5, dtype=F64) + 0.5, reduction="none"),
     lambda: {"input": rn(4, 5), "target": ri(5, 4)})
loss("multimargin_single", "MultiMarginLoss", dict(reduction="sum"), lambda: nn.MultiMarginLoss(reduction="sum"),
     lambda: {"input": rn(6), "target": torch.tensor(2)})
loss("multilabelmargin", "MultiLabelMarginLoss", {}, lambda: nn.MultiLabelMarginLoss(),
     lambda: {"input": rn(4, 5), "target": torch.tensor([[3, 0, -1, 1, 2], [1, 4, 2, -1, 0], [0, 1, 2, 3, 4],
                                                          [2, 2, -1, 4, 4]])})
loss("multilabelmargin_single_none", "MultiLabelMarginLoss", dict(reduction="none"),
     lambda: nn.MultiLabelMarginLoss(reduction="none"),
     lambda: {"input": rn(4), "target": torch.tensor([3, 1, -1, 0])})
loss("multilabelsoftmargin", "MultiLabelSoftMarginLoss", {}, lambda: nn.MultiLabelSoftMarginLoss(),
     lambda: {"input": rn(3, 5, scale=2.0), "target": torch.randint(0, 2, (3, 5)).to(F64)},
     grads=["input", "target"])
loss("multilabelsoftmargin_weight_none", "MultiLabelSoftMarginLoss", dict(reduction="none"),
     lambda: nn.MultiLabelSoftMarginLoss(weight=torch.rand(4, dtype=F64) + 0.5, reduction="none"),
     lambda: {"input": rn(2, 3, 4), "target": torch.rand(2, 3, 4, dtype=F64)})
loss("tripletmarginwithdistance", "TripletMarginWithDistanceLoss", {}, lambda: nn.TripletMarginWithDistanceLoss(),
     lambda: {"anchor": rn(5, 4), "positive": rn(5, 4), "negative": rn(5, 4)},
     grads=["anchor", "positive", "negative"])
loss("tripletmarginwithdistance_cosine_swap_none", "TripletMarginWithDistanceLoss",
     dict(distance="cosine", margin=0.4, swap=1, reduction="none"),
     lambda: nn.TripletMarginWithDistanceLoss(distance_function=cosine_distance, margin=0.4, swap=True,
                                              reduction="none"),
     lambda: {"anchor": rn(6, 3), "positive": rn(6, 3), "negative": rn(6, 3)},
     grads=["anchor", "positive", "negative"])
loss("poissonnll", "PoissonNLLLoss", {}, lambda: nn.PoissonNLLLoss(),
     lambda: {"input": rn(3, 4), "target": torch.randint(0, 6, (3, 4)).to(F64)})
loss("poissonnll_rate_full_sum", "PoissonNLLLoss", dict(log_input=0, full=1, eps=1e-4, reduction="sum"),
     lambda: nn.PoissonNLLLoss(log_input=False, full=True, eps=1e-4, reduction="sum"),
     lambda: {"input": torch.rand(3, 4, dtype=F64) * 4, "target": torch.randint(0, 6, (3, 4)).to(F64)},
     grads=["input", "target"])
loss("gaussiannll", "GaussianNLLLoss", {}, lambda: nn.GaussianNLLLoss(),
     lambda: {"input": rn(4, 3), "target": rn(4, 3),
              "var": torch.tensor([[0.5, 1e-8, 2.0], [0.1, 0.3, 1.0], [1.5, 0.2, 0.0], [0.7, 0.9, 3.0]], dtype=F64)},
     grads=["input", "target", "var"])
loss("gaussiannll_full_per_sample_none", "GaussianNLLLoss", dict(full=1, eps=1e-3, reduction="none"),
     lambda: nn.GaussianNLLLoss(full=True, eps=1e-3, reduction="none"),
     lambda: {"input": rn(4, 3), "target": rn(4, 3), "var": torch.rand(4, dtype=F64) + 0.1},
     grads=["input", "target", "var"])
loss("gaussiannll_last_dim_one_sum", "GaussianNLLLoss", dict(reduction="sum"),
     lambda: nn.GaussianNLLLoss(reduction="sum"),
     lambda: {"input": rn(2, 3, 2), "target": rn(2, 3, 2), "var": torch.rand(2, 3, 1, dtype=F64) + 0.1},
     grads=["input", "var"])

# Adaptive softmax: forward (each row's target log-probability and the loss) and log_prob
def asm_fwd(m, x, t):
    r = m(x, t)
    return r.output, r.loss


case("adaptivelogsoftmax", "AdaptiveLogSoftmaxWithLoss", dict(in_features=8, n_classes=10, cutoffs=[3, 6]),
     lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6]),
     lambda: {"input": rn(7, 8), "target": torch.tensor([0, 9, 4, 2, 6, 5, 8])}, fwd=asm_fwd)
case("adaptivelogsoftmax_head_bias_div2_single", "AdaptiveLogSoftmaxWithLoss",
     dict(in_features=6, n_classes=7, cutoffs=[2], div_value=2.0, head_bias=1),
     lambda: nn.AdaptiveLogSoftmaxWithLoss(6, 7, [2], div_value=2.0, head_bias=True),
     lambda: {"input": rn(6), "target": torch.tensor(5)}, fwd=asm_fwd)
case("adaptivelogsoftmax_log_prob", "AdaptiveLogSoftmaxWithLoss",
     dict(in_features=8, n_classes=12, cutoffs=[4, 7, 10], method="log_prob"),
     lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 12, [4, 7, 10]), lambda: {"input": rn(5, 8)},
     fwd=lambda m, x: m.log_prob(x))

# Composite architectures: names of nested parameters and buffers, and a forward through them.
case("arch_seq_mlp", "ArchSequentialMLP", {},
     lambda: nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3)), lambda: {"input": rn(5, 4)})
case("arch_seq_nested", "ArchNestedSequential", {},
     lambda: nn.Sequential(nn.Sequential(nn.Linear(3, 4), nn.Tanh()),
                           nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Sequential(nn.Linear(4, 2)))),
     lambda: {"input": rn(2, 3)})
case("arch_seq_cnn", "ArchSequentialCNN", {},
     lambda: nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                           nn.Flatten(), nn.Linear(16, 3)),
     lambda: {"input": rn(3, 2, 4, 4)}, init=lambda m: norm_buffers(m[1]))
case("arch_modulelist", "ArchModuleList", {}, ListNet, lambda: {"input": rn(2, 3)})
case("arch_moduledict_parameterlist", "ArchModuleDict", {}, DictNet, lambda: {"input": rn(2, 3)})
case("arch_lstm_2layer_bidir_names", "LSTM", dict(input_size=2, hidden_size=2, num_layers=2, bidirectional=True),
     lambda: nn.LSTM(2, 2, num_layers=2, bidirectional=True), lambda: {})
case("arch_transformer_encoder_names", "TransformerEncoder", dict(TL, num_layers=2, norm=1, layer_norm_eps=1e-4),
     lambda: nn.TransformerEncoder(enc_layer(layer_norm_eps=1e-4), 2, norm=nn.LayerNorm(4)), lambda: {})


# ---- writing ---------------------------------------------------------------------------------
DTYPES = {torch.float64: "f64", torch.float32: "f32", torch.int64: "i64", torch.bool: "bool"}


def fmt_value(v):
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    return repr(v) if isinstance(v, float) else str(v)


def quantize(t):
    """Drawn values rounded to 4 decimals: short to write, and the same double on both sides."""
    return t if not t.is_floating_point() else ((t.double() * 1e4).round() / 1e4).to(t.dtype)


def fmt_tensor(role, name, t):
    t = t.detach()
    dt = DTYPES[t.dtype]
    flat = t.reshape(-1).tolist()
    if dt == "f64":  # 13 significant digits (5e-14 relative): far below the test's 1e-10 tolerance
        vals = " ".join(repr(v) if len(repr(v)) <= 15 or not math.isfinite(v) else f"{v:.13g}" for v in flat)
    elif dt == "f32":  # 9 significant digits read back to the same float
        vals = " ".join(f"{v:.9g}" for v in flat)
    else:
        vals = " ".join(str(int(v)) for v in flat)
    dims = " ".join(str(d) for d in t.shape)
    return f"{role} {name} {dt} {t.dim()}{' ' + dims if dims else ''} : {vals}".rstrip()


def flatten_outputs(out):
    if isinstance(out, torch.Tensor):
        return [out]
    res = []
    for o in out:
        if o is not None:
            res.extend(flatten_outputs(o))
    return res


def run_case(c):
    torch.manual_seed(SEED ^ zlib.crc32(c["name"].encode()))
    dtype = torch.float32 if c["dtype"] == "f32" else F64
    m = c["make"]()
    m.to(dtype)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(quantize(rn(*p.shape, dtype=dtype, scale=0.5)))
        if c["init"]:
            c["init"](m)
        for name, b in m.named_buffers():  # loss weights: positive
            if b.is_floating_point() and not name.endswith(("running_mean", "running_var")):
                b.copy_(torch.rand(*b.shape, dtype=dtype) + 0.5)
            if b.is_floating_point():
                b.copy_(quantize(b))
    m.train(c["train"])
    lines = [f"case {c['name']}"]
    opts = " ".join(f"{k}={fmt_value(v)}" for k, v in c["opts"].items())
    lines.append(f"module {c['type']}{' ' + opts if opts else ''}")
    lines.append(f"dtype {c['dtype']}")
    lines.append(f"mode {'train' if c['train'] else 'eval'}")
    lines.append("state_keys : " + " ".join(m.state_dict().keys()))
    for n, p in m.named_parameters():
        lines.append(fmt_tensor("param", n, p))
    for n, b in m.named_buffers():
        lines.append(fmt_tensor("buffer", n, b))
    inputs = c["inputs"]()
    if inputs:
        inputs = {k: (quantize(v.to(dtype)) if v.is_floating_point() else v) for k, v in inputs.items()}
        first = next(iter(inputs))
        grads = c["grads"] if c["grads"] is not None else ([first] if inputs[first].is_floating_point() else [])
        for k in grads:
            inputs[k].requires_grad_(True)
        for k, v in inputs.items():
            lines.append(fmt_tensor("input", k, v))
        fwd = c["fwd"] or (lambda mod, *xs: mod(*xs))
        outs = flatten_outputs(fwd(m, *inputs.values()))
        for i, o in enumerate(outs):
            lines.append(fmt_tensor("output", str(i), o))
        diff = [(i, o) for i, o in enumerate(outs) if o.is_floating_point() and o.requires_grad]
        cots = [quantize(rn(*o.shape, dtype=o.dtype)) for _, o in diff]
        for (i, _), w in zip(diff, cots):
            lines.append(fmt_tensor("cotangent", str(i), w))
        for n, b in m.named_buffers():
            lines.append(fmt_tensor("buffer_after", n, b))
        targets = [inputs[k] for k in grads] + list(m.parameters())
        if diff and targets:
            gs = torch.autograd.grad([o for _, o in diff], targets, cots, allow_unused=True)
            for k, g in zip(grads, gs):
                lines.append(fmt_tensor("grad_input", k, g if g is not None else torch.zeros_like(inputs[k])))
            for (n, p), g in zip(m.named_parameters(), gs[len(grads):]):
                lines.append(fmt_tensor("grad_param", n, g if g is not None else torch.zeros_like(p)))
    lines.append("end")
    return lines


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(here, "..", "tests", "data", "nn_golden", "modules.txt")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", default=default_out)
    args = ap.parse_args()
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names)), "duplicate case names"
    text = ["ember-nn-golden 1",
            f"# Generated by tools/gen_nn_golden.py with torch {torch.__version__}, seed {SEED}. "
            "Do not edit by hand."]
    for c in CASES:
        text.extend(run_case(c))
    text.append(f"total {len(CASES)}")
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w", encoding="ascii", newline="\n") as f:
        f.write("\n".join(text) + "\n")
    print(f"wrote {len(CASES)} cases, {os.path.getsize(args.output)} bytes to {args.output}")


if __name__ == "__main__":
    main()
