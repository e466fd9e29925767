#!/usr/bin/python3
"""Writes tests/data/autograd_golden.txt: PyTorch's values for a set of ops and composite
expressions, read by tests/test_autograd_golden.cpp.

A developer tool, run by hand with Debian's python3-torch (apt-get install python3-torch);
neither the build nor CI runs it or needs torch. Rerun it after adding or changing a case:

    /usr/bin/python3 tools/gen_golden.py            # writes tests/data/autograd_golden.txt
    /usr/bin/python3 tools/gen_golden.py -o FILE    # elsewhere

Every case evaluates one named expression (the C++ test has a lambda per name) on float64
inputs drawn from a fixed seed, and records
  output   out = f(inputs...)
  grad     d sum(w * out) / d input_i, for a recorded random cotangent w
  hvp      d sum_i sum(v_i * grad_i) / d input_j, for recorded random v_i: a Hessian-vector
           product, computed through the first backward with create_graph=True.
Inputs are drawn away from kinks (0 for abs/relu, clamp bounds, ties for maximum/amax) so
that both frameworks sit on the same smooth branch.

File format (plain text, one record a line, '#' starts a comment line):
    ember-autograd-golden 1
    case <case-name>
    expr <expression-name>
    tensor <role> <dtype> <ndim> <dims...> : <values...>
    end
    total <number of cases>
roles, in this order: input (one per differentiable input), const (non-differentiable
inputs, passed after the inputs), output, cotangent, grad (one per input), v (one per
input), hvp (one per input). dtype is f64 or i64; values are row-major, written with
Python's repr (shortest text that reads back to the same double).
"""

import argparse
import os
import random
import sys

import torch
import torch.nn.functional as F

SEED = 20240611
EPS = 1e-5

# ---- expressions: name -> function of (inputs..., consts...) ------------------------------
# Keep in step with the lambdas in tests/test_autograd_golden.cpp.
EXPRS = {
    # elementwise unary
    "exp": lambda x: torch.exp(x),
    "log": lambda x: torch.log(x),
    "sqrt": lambda x: torch.sqrt(x),
    "tanh": lambda x: torch.tanh(x),
    "sigmoid": lambda x: torch.sigmoid(x),
    "sin": lambda x: torch.sin(x),
    "gelu": lambda x: F.gelu(x),
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": lambda x: F.silu(x),
    "softplus_b2": lambda x: F.softplus(x, beta=2.0, threshold=20.0),
    "elu_a07": lambda x: F.elu(x, alpha=0.7),
    "leaky_relu_01": lambda x: F.leaky_relu(x, negative_slope=0.1),
    "abs": lambda x: torch.abs(x),
    "relu": lambda x: torch.relu(x),
    "clamp_m05_05": lambda x: torch.clamp(x, -0.5, 0.5),
    "erf": lambda x: torch.erf(x),
    "atan": lambda x: torch.atan(x),
    "reciprocal": lambda x: torch.reciprocal(x),
    "rsqrt": lambda x: torch.rsqrt(x),
    "pow_scalar_2_5": lambda x: torch.pow(x, 2.5),
    # binary, broadcasting
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: torch.pow(a, b),
    "atan2": lambda a, b: torch.atan2(a, b),
    "maximum": lambda a, b: torch.maximum(a, b),
    "minimum": lambda a, b: torch.minimum(a, b),
    "hypot": lambda a, b: torch.hypot(a, b),
    # reductions
    "sum_dims02": lambda x: x.sum(dim=(0, 2)),
    "sum_all": lambda x: (x * x).sum(),
    "mean_dim1_keep": lambda x: x.mean(dim=1, keepdim=True),
    "prod_dim1": lambda x: x.prod(dim=1),
    "amax_dim0": lambda x: torch.amax(x, dim=0),
    "norm2_dim1": lambda x: torch.norm(x, p=2, dim=1),
    "norm3_dim1": lambda x: torch.norm(x, p=3, dim=1),
    "var_dim1": lambda x: torch.var(x, dim=1),
    "std_dim0": lambda x: torch.std(x, dim=0),
    "logsumexp_dim1": lambda x: torch.logsumexp(x, dim=1),
    "softmax_dim1": lambda x: torch.softmax(x, dim=1),
    "log_softmax_dim0": lambda x: torch.log_softmax(x, dim=0),
    "cumsum_dim1": lambda x: torch.cumsum(x, dim=1),
    "cumprod_dim0": lambda x: torch.cumprod(x, dim=0),
    # matrix products
    "matmul": lambda a, b: torch.matmul(a, b),
    # composites
    "mlp_tanh_sum": lambda x, w, b: torch.tanh(x @ w + b).sum(),
    "mlp2_gelu": lambda x, w1, b1, w2: F.gelu(x @ w1 + b1) @ w2,
    "cross_entropy": lambda logits, target: -torch.log_softmax(logits, dim=1).gather(1, target).mean(),
    "layer_norm": lambda x, g, b: (x - x.mean(dim=1, keepdim=True))
    / torch.sqrt(x.var(dim=1, unbiased=False, keepdim=True) + EPS) * g + b,
    "attention": lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1) / 2.0, dim=-1) @ v,
    "where_exp_sin": lambda x: torch.where(x > 0, torch.exp(x), torch.sin(x)),
    "views_cat": lambda a, b: torch.sin(
        torch.cat([a.t().narrow(1, 0, 2) * b, torch.exp(a.t().narrow(1, 1, 2))], dim=0).reshape(4, 4)),
}

# ---- input generators ---------------------------------------------------------------------


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def draw(rng, kind, shape):
    """A list of numel(shape) doubles of the given kind."""
    out = []
    for _ in range(numel(shape)):
        if kind == "normal":  # N(0, 1), kept off 0 by at least 0.1 (kinks of abs/relu/where)
            v = rng.gauss(0.0, 1.0)
            while abs(v) < 0.1:
                v = rng.gauss(0.0, 1.0)
        elif kind == "pos":  # (0.5, 2): log, sqrt, pow bases, denominators
            v = rng.uniform(0.5, 2.0)
        elif kind == "nonzero":  # +-(0.5, 1.5): products of these stay well away from 0
            v = rng.uniform(0.5, 1.5) * rng.choice((-1.0, 1.0))
        elif kind == "clampsafe":  # (-1, 1), at least 0.05 from the clamp bounds +-0.5
            v = rng.uniform(-1.0, 1.0)
            while abs(abs(v) - 0.5) < 0.05:
                v = rng.uniform(-1.0, 1.0)
        elif kind == "small":  # N(0, 0.5^2): weights
            v = rng.gauss(0.0, 0.5)
        else:
            raise ValueError(kind)
        out.append(v)
    return out


def acceptable(name, xs):
    """Whether a draw keeps clear of ties (gradients split between equal elements)."""
    if name == "amax_dim0":  # no two elements of a column within 0.05
        s = xs[0].sort(dim=0).values
        return bool(((s[1:] - s[:-1]) >= 0.05).all())
    if name in ("maximum_bcast", "minimum_bcast"):  # |a - b| >= 0.05 after broadcasting
        return bool(((xs[0] - xs[1]).abs() >= 0.05).all())
    return True


# ---- cases: (case name, expression, [(input kind, shape)], [(const dtype, shape, values)]) --
def unary(name, kind="normal", shape=(3, 4)):
    return (name, name, [(kind, shape)], [])


CASES = [
    unary("exp"),
    unary("log", "pos"),
    unary("sqrt", "pos"),
    unary("tanh"),
    unary("sigmoid"),
    unary("sin"),
    unary("gelu"),
    unary("gelu_tanh"),
    unary("silu"),
    unary("softplus_b2"),
    unary("elu_a07"),
    unary("leaky_relu_01"),
    unary("abs"),
    unary("relu"),
    unary("clamp_m05_05", "clampsafe"),
    unary("erf"),
    unary("atan"),
    unary("reciprocal", "pos"),
    unary("rsqrt", "pos"),
    unary("pow_scalar_2_5", "pos"),
    ("add_bcast", "add", [("normal", (3, 4)), ("normal", (4,))], []),
    ("sub_bcast", "sub", [("normal", (3, 1)), ("normal", (1, 4))], []),
    ("mul_bcast", "mul", [("normal", (2, 3, 4)), ("normal", (3, 1))], []),
    ("div_bcast", "div", [("normal", (3, 4)), ("pos", (3, 1))], []),
    ("pow_bcast", "pow", [("pos", (3, 4)), ("normal", (4,))], []),
    ("atan2", "atan2", [("normal", (3, 4)), ("normal", (3, 4))], []),
    ("maximum_bcast", "maximum", [("normal", (3, 4)), ("normal", (4,))], []),
    ("minimum_bcast", "minimum", [("normal", (3, 1)), ("normal", (3, 4))], []),
    ("hypot_bcast", "hypot", [("normal", (3, 4)), ("normal", (1, 4))], []),
    unary("sum_dims02", "normal", (2, 3, 4)),
    unary("sum_all", "normal", (3, 4)),
    unary("mean_dim1_keep", "normal", (3, 4)),
    unary("prod_dim1", "nonzero", (3, 4)),
    unary("amax_dim0", "normal", (4, 3)),
    unary("norm2_dim1", "normal", (3, 4)),
    unary("norm3_dim1", "normal", (3, 4)),
    unary("var_dim1", "normal", (3, 5)),
    unary("std_dim0", "normal", (4, 3)),
    unary("logsumexp_dim1", "normal", (3, 4)),
    unary("softmax_dim1", "normal", (3, 4)),
    unary("log_softmax_dim0", "normal", (3, 4)),
    unary("cumsum_dim1", "normal", (3, 4)),
    unary("cumprod_dim0", "nonzero", (4, 3)),
    ("matmul_2d", "matmul", [("normal", (3, 4)), ("normal", (4, 2))], []),
    ("matmul_batched_bcast", "matmul", [("normal", (2, 3, 4)), ("normal", (4, 5))], []),
    ("matmul_batch_bcast_4d", "matmul", [("normal", (2, 1, 3, 4)), ("normal", (3, 4, 2))], []),
    ("mlp_tanh_sum", "mlp_tanh_sum", [("normal", (4, 3)), ("small", (3, 5)), ("small", (5,))], []),
    ("mlp2_gelu", "mlp2_gelu", [("normal", (4, 3)), ("small", (3, 5)), ("small", (5,)), ("small", (5, 2))], []),
    ("cross_entropy", "cross_entropy", [("normal", (4, 5))], [("i64", (4, 1), [2, 0, 4, 1])]),
    ("layer_norm", "layer_norm", [("normal", (3, 5)), ("normal", (5,)), ("normal", (5,))], []),
    ("attention", "attention", [("normal", (2, 3, 4)), ("normal", (2, 3, 4)), ("normal", (2, 3, 4))], []),
    unary("where_exp_sin", "normal", (3, 4)),
    ("views_cat", "views_cat", [("normal", (3, 4)), ("normal", (4, 2))], []),
]

# ---- evaluation ---------------------------------------------------------------------------


def fmt_tensor(role, t):
    t = t.detach().clone(memory_format=torch.contiguous_format)
    if t.dtype == torch.float64:
        dtype, vals = "f64", [repr(float(v)) for v in t.reshape(-1).tolist()]
    elif t.dtype == torch.int64:
        dtype, vals = "i64", [str(int(v)) for v in t.reshape(-1).tolist()]
    else:
        raise TypeError(t.dtype)
    for v in vals:
        if v in ("nan", "inf", "-inf"):
            raise ValueError(f"non-finite value in {role}")
    dims = " ".join(str(d) for d in t.shape)
    head = f"tensor {role} {dtype} {t.dim()}" + (f" {dims}" if dims else "")
    return f"{head} : {' '.join(vals)}"


def randn_like_f64(rng, shape):
    return torch.tensor([rng.gauss(0.0, 1.0) for _ in range(numel(shape))], dtype=torch.float64).reshape(shape)


def run_case(rng, case):
    name, expr, specs, consts = case
    fn = EXPRS[expr]
    while True:
        vals = [draw(rng, kind, shape) for kind, shape in specs]
        xs = [torch.tensor(v, dtype=torch.float64).reshape(shape).requires_grad_()
              for v, (kind, shape) in zip(vals, specs)]
        if acceptable(name, [x.detach() for x in xs]):
            break
    cs = [torch.tensor(v, dtype=torch.int64).reshape(shape) for (dt, shape, v) in consts]

    out = fn(*xs, *cs)
    w = randn_like_f64(rng, tuple(out.shape))
    grads = torch.autograd.grad(out, xs, grad_outputs=w, create_graph=True, allow_unused=True)
    grads = [torch.zeros_like(x) if g is None else g for x, g in zip(xs, grads)]
    vs = [randn_like_f64(rng, tuple(x.shape)) for x in xs]
    s = None
    for v, g in zip(vs, grads):
        if g.requires_grad:
            term = (v * g).sum()
            s = term if s is None else s + term
    if s is None:  # the gradients do not depend on the inputs: zero second derivatives
        hvps = [torch.zeros_like(x) for x in xs]
    else:
        hvps = torch.autograd.grad(s, xs, allow_unused=True)
        hvps = [torch.zeros_like(x) if h is None else h for x, h in zip(xs, hvps)]

    lines = [f"case {name}", f"expr {expr}"]
    lines += [fmt_tensor("input", x) for x in xs]
    lines += [fmt_tensor("const", c) for c in cs]
    lines.append(fmt_tensor("output", out))
    lines.append(fmt_tensor("cotangent", w))
    lines += [fmt_tensor("grad", g) for g in grads]
    lines += [fmt_tensor("v", v) for v in vs]
    lines += [fmt_tensor("hvp", h) for h in hvps]
    lines.append("end")
    return lines


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(here, "..", "tests", "data", "autograd_golden.txt")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", default=default_out)
    args = ap.parse_args()

    torch.set_default_dtype(torch.float64)
    rng = random.Random(SEED)
    names = [c[0] for c in CASES]
    assert len(set(names)) == len(names), "duplicate case names"
    lines = [
        "ember-autograd-golden 1",
        f"# Generated by tools/gen_golden.py with torch {torch.__version__}, seed {SEED}. Do not edit by hand.",
    ]
    for case in CASES:
        lines += run_case(rng, case)
    lines.append(f"total {len(CASES)}")
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, "w", encoding="ascii", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    size = os.path.getsize(args.output)
    print(f"wrote {len(CASES)} cases, {size} bytes to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
