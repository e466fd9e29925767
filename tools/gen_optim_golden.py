#!/usr/bin/python3
"""Writes tests/data/optim/optimizers.txt and tests/data/optim/schedulers.txt: PyTorch's
parameter trajectories for Ember's optimisers and its learning-rate sequences for Ember's
schedulers, read by tests/optim/test_optim_golden.cpp.

A developer tool, run by hand with Debian's python3-torch (apt-get install python3-torch);
neither the build nor CI runs it or needs torch:

    /usr/bin/python3 tools/gen_optim_golden.py              # writes tests/data/optim/
    /usr/bin/python3 tools/gen_optim_golden.py -o DIR       # elsewhere

Optimiser cases: three parameters (shapes [2, 3], [9], [4]: SIMD bodies and tails for both
f32 and f64) with values and gradients drawn from a fixed seed; some gradients are missing
(None) at some steps, as when a parameter takes no part in a loss. Some cases put the
parameters in two groups with different options. Each step records the gradients and every
parameter's value after optimizer.step().

Run with PyTorch 2.x (e.g. PyPI's wheel in a venv), the tool steps torch.optim's optimisers
as they are. Where Ember follows PyTorch 2.x and the installed PyTorch (1.13 on Debian 12)
differs, the tool reproduces 2.x exactly from 1.13's pieces:
  * maximize for NAdam and RAdam: 2.x negates the gradient first, so the tool steps 1.13's
    optimiser on the negated gradient;
  * decoupled_weight_decay for NAdam and RAdam: 2.x multiplies the parameter by
    1 - lr * weight_decay first, so the tool does that and steps with weight_decay 0;
  * NAdam: 2.0 fixed the momentum product of the next step (1.13 multiplied mu_t in twice).
    The tool runs a transcription of 2.x's _single_tensor_nadam, and first checks that the
    same transcription with 1.13's product reproduces torch.optim.NAdam bit for bit.
Lion is not in PyTorch: its cases follow the paper's algorithm (Chen et al. 2023), written
here with torch ops. torch's default dtype is float64 while the tool runs, so that scalar
state PyTorch keeps in tensors (step counts, NAdam's mu_product, ASGD's eta and mu) is double, as
in Ember.

Scheduler cases: an optimiser (SGD or Adam) with one or two parameter groups, a scheduler,
and the learning rate of every group after construction and after each step (and the
momentum or beta1 for schedulers that cycle it; the metric for ReduceLROnPlateau).

File format (plain text, one record a line, '#' starts a comment line):
  optimizers.txt                           schedulers.txt
    ember-optim-golden 1                     ember-sched-golden 1
    case <name>                              case <name>
    optimizer <Name> <f64|f32>               optimizer <SGD|Adam> <k=v ...>
    defaults <k=v ...>                       group_lrs <lr per group>
    group <first> <count> <k=v ...>          metric <step> : <value>      (ReduceLROnPlateau)
    param <i> <ndim> <dims...> : <values>    lr <step> : <lr per group>
    grad <step> <i> : <values> | none        momentum <step> : <value per group>
    value <step> <i> : <values>              end
    state <step> <i> <buffer> : <values>     total <cases>
    end
    total <cases>
Options use Ember's names (beta1 and beta2 for betas; flags are 0 or 1); a group line lists
the options that differ from the defaults. Steps count from 1 (0 = after construction for
schedulers). A state record holds a state buffer after the step, for optimisers whose
parameter values leave it untested (ASGD's average "ax"; Rprop's "step_size"). Values are written with Python's repr (the shortest text that reads back to the
same double).
"""

import argparse
import os
import warnings

import torch

SEED = 20240917
torch.set_default_dtype(torch.float64)

SHAPES = [(2, 3), (9,), (4,)]
# (step, parameter) pairs whose gradient is None: param 2 gets its first gradient at step 2
# (its state starts later), param 1 skips step 2.
MISSING = {(1, 2), (2, 1), (3, 2)}
STEPS = 5

# ---- optimiser cases ------------------------------------------------------------------------
# name: (optimizer, dtype, defaults, group-1 overrides or None, steps). With overrides,
# param 0 is group 0 and params 1, 2 are group 1.
OPT_CASES = {
    "sgd_plain": ("SGD", "f64", {"lr": 0.1}, None, STEPS),
    "sgd_momentum_dampening_wd": ("SGD", "f64", {"lr": 0.05, "momentum": 0.9, "dampening": 0.1,
                                                 "weight_decay": 0.01}, None, STEPS),
    "sgd_nesterov_maximize": ("SGD", "f64", {"lr": 0.05, "momentum": 0.8, "nesterov": 1, "maximize": 1,
                                             "weight_decay": 0.001}, None, STEPS),
    "sgd_groups": ("SGD", "f64", {"lr": 0.1, "momentum": 0.9}, {"lr": 0.01, "momentum": 0.0}, STEPS),
    "sgd_momentum_f32": ("SGD", "f32", {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01}, None, STEPS),
    "adam_default": ("Adam", "f64", {"lr": 0.01}, None, STEPS),
    "adam_amsgrad_wd": ("Adam", "f64", {"lr": 0.02, "beta1": 0.8, "beta2": 0.99, "eps": 1e-6,
                                        "weight_decay": 0.05, "amsgrad": 1}, None, STEPS),
    "adam_maximize": ("Adam", "f64", {"lr": 0.01, "maximize": 1}, None, STEPS),
    "adam_groups": ("Adam", "f64", {"lr": 0.01}, {"lr": 0.005, "amsgrad": 1, "beta1": 0.5}, STEPS),
    "adam_f32": ("Adam", "f32", {"lr": 0.01, "amsgrad": 1}, None, STEPS),
    "adamw_default": ("AdamW", "f64", {"lr": 0.01}, None, STEPS),
    "adamw_amsgrad_maximize": ("AdamW", "f64", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": 1, "maximize": 1},
                               None, STEPS),
    "adamw_groups": ("AdamW", "f64", {"lr": 0.01}, {"weight_decay": 0.0, "eps": 1e-3}, STEPS),
    "adamw_f32": ("AdamW", "f32", {"lr": 0.01, "weight_decay": 0.05}, None, STEPS),
    "rmsprop_default": ("RMSprop", "f64", {"lr": 0.01}, None, STEPS),
    "rmsprop_centered_momentum": ("RMSprop", "f64", {"lr": 0.01, "alpha": 0.9, "centered": 1, "momentum": 0.9,
                                                     "weight_decay": 0.01}, None, STEPS),
    "rmsprop_momentum_maximize": ("RMSprop", "f64", {"lr": 0.01, "momentum": 0.5, "maximize": 1, "eps": 1e-4},
                                  None, STEPS),
    "rmsprop_groups": ("RMSprop", "f64", {"lr": 0.01, "centered": 1}, {"centered": 0, "momentum": 0.7}, STEPS),
    "rmsprop_centered_f32": ("RMSprop", "f32", {"lr": 0.01, "centered": 1, "momentum": 0.9}, None, STEPS),
    "adagrad_default": ("Adagrad", "f64", {"lr": 0.1}, None, STEPS),
    "adagrad_decay": ("Adagrad", "f64", {"lr": 0.1, "lr_decay": 0.1, "weight_decay": 0.01,
                                         "initial_accumulator_value": 0.5, "eps": 1e-8}, None, STEPS),
    # PyTorch fills every accumulator from the constructor's initial_accumulator_value and
    # ignores a group's own, where Ember uses the group's: the groups here share it.
    "adagrad_maximize_groups": ("Adagrad", "f64", {"lr": 0.1, "maximize": 1, "initial_accumulator_value": 0.1},
                                {"lr": 0.05, "lr_decay": 0.2}, STEPS),
    "adadelta_default": ("Adadelta", "f64", {}, None, STEPS),
    "adadelta_rho_wd": ("Adadelta", "f64", {"lr": 0.5, "rho": 0.5, "eps": 1e-4, "weight_decay": 0.1}, None, STEPS),
    "adadelta_maximize_groups": ("Adadelta", "f64", {"lr": 1.0, "maximize": 1}, {"rho": 0.99, "lr": 2.0}, STEPS),
    "adamax_default": ("Adamax", "f64", {"lr": 0.02}, None, STEPS),
    "adamax_wd_maximize": ("Adamax", "f64", {"lr": 0.02, "weight_decay": 0.05, "maximize": 1, "beta1": 0.7},
                           None, STEPS),
    "adamax_groups": ("Adamax", "f64", {"lr": 0.02}, {"lr": 0.01, "eps": 0.1, "beta2": 0.9}, STEPS),
    "nadam_default": ("NAdam", "f64", {"lr": 0.02}, None, STEPS),
    "nadam_wd_momentum_decay": ("NAdam", "f64", {"lr": 0.02, "weight_decay": 0.01, "momentum_decay": 0.01},
                                None, STEPS),
    "nadam_decoupled_maximize": ("NAdam", "f64", {"lr": 0.02, "weight_decay": 0.1, "decoupled_weight_decay": 1,
                                                  "maximize": 1}, None, STEPS),
    "nadam_groups": ("NAdam", "f64", {"lr": 0.02}, {"lr": 0.01, "beta2": 0.9, "momentum_decay": 0.1}, STEPS),
    "nadam_f32": ("NAdam", "f32", {"lr": 0.02}, None, STEPS),
    # beta2 = 0.999 rectifies from step 6 on; beta2 = 0.9 from step 3.
    "radam_default": ("RAdam", "f64", {"lr": 0.01}, None, 8),
    "radam_wd": ("RAdam", "f64", {"lr": 0.01, "beta2": 0.9, "weight_decay": 0.01}, None, STEPS),
    "radam_decoupled_maximize": ("RAdam", "f64", {"lr": 0.01, "beta2": 0.9, "weight_decay": 0.1,
                                                  "decoupled_weight_decay": 1, "maximize": 1}, None, STEPS),
    "radam_groups": ("RAdam", "f64", {"lr": 0.01, "beta2": 0.9}, {"lr": 0.02, "beta2": 0.95, "eps": 1e-3}, 8),
    "lion_default": ("Lion", "f64", {"lr": 0.01}, None, STEPS),
    "lion_wd_maximize": ("Lion", "f64", {"lr": 0.01, "weight_decay": 0.5, "maximize": 1, "beta1": 0.8}, None, STEPS),
    "lion_groups": ("Lion", "f64", {"lr": 0.01}, {"lr": 0.02, "beta2": 0.9}, STEPS),
    # Rprop: eight steps, so that step sizes grow and shrink repeatedly; the second case's
    # narrow step_sizes clamp them at both ends.
    "rprop_default": ("Rprop", "f64", {}, None, 8),
    "rprop_clamped_maximize": ("Rprop", "f64", {"lr": 0.02, "etaminus": 0.25, "etaplus": 1.5,
                                                "step_size_min": 0.004, "step_size_max": 0.03, "maximize": 1},
                               None, 8),
    "rprop_groups_f32": ("Rprop", "f32", {"lr": 0.01}, {"lr": 0.05, "etaplus": 2.0}, 8),
    # ASGD: a large lambd moves eta visibly; t0 = 2 starts the averaging within the steps.
    "asgd_default": ("ASGD", "f64", {}, None, STEPS),
    "asgd_averaging_wd": ("ASGD", "f64", {"lr": 0.05, "lambd": 0.5, "alpha": 0.6, "t0": 2.0,
                                          "weight_decay": 0.1}, None, 8),
    "asgd_maximize_groups": ("ASGD", "f64", {"lr": 0.05, "t0": 1.0, "maximize": 1},
                             {"lr": 0.1, "lambd": 0.2, "t0": 3.0}, 8),
    "asgd_f32": ("ASGD", "f32", {"lr": 0.05, "lambd": 0.3, "t0": 2.0}, None, 8),
}

TORCH_OPT = {
    "SGD": torch.optim.SGD, "Adam": torch.optim.Adam, "AdamW": torch.optim.AdamW,
    "RMSprop": torch.optim.RMSprop, "Adagrad": torch.optim.Adagrad, "Adadelta": torch.optim.Adadelta,
    "Adamax": torch.optim.Adamax, "NAdam": torch.optim.NAdam, "RAdam": torch.optim.RAdam,
    "Rprop": torch.optim.Rprop, "ASGD": torch.optim.ASGD,
}
# Defaults of the options the tool emulates, per optimiser.
# PyTorch 2.x has everything natively: no emulation, no NAdam transcription.
TORCH2 = int(torch.__version__.split(".")[0]) >= 2
EMULATED = {} if TORCH2 else {"NAdam": {"maximize": 0, "decoupled_weight_decay": 0},
                              "RAdam": {"maximize": 0, "decoupled_weight_decay": 0}}
BETA_DEFAULTS = {"Adam": (0.9, 0.999), "AdamW": (0.9, 0.999), "Adamax": (0.9, 0.999), "NAdam": (0.9, 0.999),
                 "RAdam": (0.9, 0.999), "Lion": (0.9, 0.99)}
LION_DEFAULTS = {"lr": 1e-4, "weight_decay": 0.0, "maximize": 0}


def torch_kwargs(name, opts):
    """Ember option names -> torch keyword arguments."""
    kw = {}
    b1, b2 = BETA_DEFAULTS.get(name, (None, None))
    etas, step_sizes = [0.5, 1.2], [1e-6, 50.0]  # Rprop's
    for k, v in opts.items():
        if k in ("etaminus", "etaplus"):
            etas[k == "etaplus"] = v
            kw["etas"] = tuple(etas)
        elif k in ("step_size_min", "step_size_max"):
            step_sizes[k == "step_size_max"] = v
            kw["step_sizes"] = tuple(step_sizes)
        elif k == "beta1":
            b1 = v
        elif k == "beta2":
            b2 = v
        elif k in ("nesterov", "amsgrad", "maximize", "centered", "decoupled_weight_decay"):
            kw[k] = bool(v)
        else:
            kw[k] = v
    if ("beta1" in opts or "beta2" in opts) and b1 is not None:
        kw["betas"] = (b1, b2)
    return kw


class Lion:
    """The paper's Lion, over torch tensors, with PyTorch-style parameter groups."""

    def __init__(self, groups):
        self.groups = groups
        self.state = {}

    @torch.no_grad()
    def step(self):
        for g in self.groups:
            b1, b2 = g["betas"]
            for p in g["params"]:
                if p.grad is None:
                    continue
                grad = -p.grad if g["maximize"] else p.grad
                if p not in self.state:
                    self.state[p] = torch.zeros_like(p)
                m = self.state[p]
                p.mul_(1 - g["lr"] * g["weight_decay"])
                update = m.mul(b1).add(grad, alpha=1 - b1).sign_()
                p.add_(update, alpha=-g["lr"])
                m.mul_(b2).add_(grad, alpha=1 - b2)


class NAdam2:
    """A transcription of PyTorch 2.x's _single_tensor_nadam (with maximize and
    decoupled_weight_decay); legacy=True uses 1.13's product for the next step."""

    def __init__(self, groups, legacy=False):
        self.groups = groups
        self.state = {}
        self.legacy = legacy

    @torch.no_grad()
    def step(self):
        for g in self.groups:
            beta1, beta2 = g["betas"]
            lr, wd, md, eps = g["lr"], g["weight_decay"], g["momentum_decay"], g["eps"]
            for param in g["params"]:
                if param.grad is None:
                    continue
                grad = -param.grad if g["maximize"] else param.grad
                if param not in self.state:
                    self.state[param] = {"step": torch.tensor(0.), "mu_product": torch.tensor(1.),
                                         "exp_avg": torch.zeros_like(param), "exp_avg_sq": torch.zeros_like(param)}
                st = self.state[param]
                exp_avg, exp_avg_sq, mu_product = st["exp_avg"], st["exp_avg_sq"], st["mu_product"]
                st["step"] += 1
                step = st["step"].item()
                bias_correction2 = 1 - beta2 ** step
                if wd != 0:
                    if g["decoupled_weight_decay"]:
                        param.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(param, alpha=wd)
                mu = beta1 * (1. - 0.5 * (0.96 ** (step * md)))
                mu_next = beta1 * (1. - 0.5 * (0.96 ** ((step + 1) * md)))
                mu_product *= mu
                # 1.13 runs mul_/add_ here; 2.x runs lerp_, equal but for rounding. The tool
                # uses 1.13's form so that legacy mode can be checked bit for bit.
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = exp_avg_sq.div(bias_correction2).sqrt().add_(eps)
                if self.legacy:
                    mu_product_next = (mu_product * mu * mu_next).item()
                else:
                    mu_product_next = mu_product.item() * mu_next
                param.addcdiv_(grad, denom, value=(-lr * (1. - mu) / (1. - mu_product.item())))
                param.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1. - mu_product_next))


def nadam_groups(param_groups):
    out = []
    for g in param_groups:
        o = {"lr": 2e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0, "momentum_decay": 4e-3,
             "maximize": False, "decoupled_weight_decay": False}
        o.update({k: v for k, v in g.items() if k != "params"})
        o["params"] = g["params"]
        out.append(o)
    return out


def make_optimizer(name, params, defaults, override):
    """Returns (step function, group list with resolved options)."""
    if override is None:
        specs = [(params, dict(defaults))]
    else:
        specs = [([params[0]], dict(defaults)), (params[1:], {**defaults, **override})]
    if name == "Lion":
        groups = []
        for ps, o in specs:
            kw = torch_kwargs(name, {**LION_DEFAULTS, **o})
            kw.setdefault("betas", BETA_DEFAULTS["Lion"])
            groups.append({"params": ps, **kw})
        opt = Lion(groups)
        return opt.step, groups
    if name == "NAdam" and not TORCH2:
        groups = nadam_groups([{"params": ps, **torch_kwargs(name, o)} for ps, o in specs])
        opt = NAdam2(groups)
        return opt.step, groups
    # Options 1.13 lacks (RAdam's maximize, decoupled_weight_decay) are emulated around it.
    emulated = EMULATED.get(name, {})
    torch_groups, extra = [], []
    for ps, o in specs:
        ext = {k: o.get(k, d) for k, d in emulated.items()}
        kw = torch_kwargs(name, {k: v for k, v in o.items() if k not in emulated})
        wd = kw.pop("weight_decay", 0.0) if ext.get("decoupled_weight_decay") else 0.0
        extra.append({"wd": wd, **ext})
        torch_groups.append({"params": ps, **kw})
    defaults_kw = {k: v for k, v in torch_groups[0].items() if k != "params"}
    opt = TORCH_OPT[name](torch_groups, **defaults_kw)

    def step():
        with torch.no_grad():
            for g, e in zip(opt.param_groups, extra):
                for p in g["params"]:
                    if p.grad is None:
                        continue
                    if e.get("maximize"):
                        p.grad.neg_()
                    if e["wd"] != 0:
                        p.mul_(1 - g["lr"] * e["wd"])
        opt.step()
        with torch.no_grad():  # restore the gradients the caller recorded
            for g, e in zip(opt.param_groups, extra):
                for p in g["params"]:
                    if p.grad is not None and e.get("maximize"):
                        p.grad.neg_()

    step.state = opt.state
    return step, opt.param_groups


# State buffers the fixture records after each step, where the parameter values alone would
# leave them untested (ASGD's average is never written into the parameter).
STATE_RECORDS = {"ASGD": ["ax"], "Rprop": ["step_size"]}


def state_of(step):
    return step.state


def check_nadam_transcription(gen):
    """The NAdam transcription with 1.13's product must match torch.optim.NAdam exactly."""
    init = [torch.randn(s, generator=gen) for s in SHAPES]
    grads = [[torch.randn(s, generator=gen) for s in SHAPES] for _ in range(STEPS)]
    for opts in ({"lr": 0.02}, {"lr": 0.02, "weight_decay": 0.01, "momentum_decay": 0.01}):
        a = [t.clone().requires_grad_() for t in init]
        b = [t.clone().requires_grad_() for t in init]
        ta = torch.optim.NAdam(a, **opts)
        tb = NAdam2(nadam_groups([{"params": b, **opts}]), legacy=True)
        for gs in grads:
            for p, q, g in zip(a, b, gs):
                p.grad, q.grad = g.clone(), g.clone()
            ta.step()
            tb.step()
        for p, q in zip(a, b):
            assert torch.equal(p, q), "the NAdam transcription does not reproduce torch.optim.NAdam"


def fmt(values):
    return " ".join(repr(float(v)) for v in values)


def opt_options_text(opts):
    return " ".join(f"{k}={repr(float(v))}" for k, v in opts.items())


def write_optimizer_case(out, gen, name, spec):
    opt_name, dtype, defaults, override, steps = spec
    tdtype = torch.float32 if dtype == "f32" else torch.float64
    params = [torch.randn(s, generator=gen).to(tdtype).requires_grad_() for s in SHAPES]
    out.append(f"case {name}")
    out.append(f"optimizer {opt_name} {dtype}")
    out.append(f"defaults {opt_options_text(defaults)}".rstrip())
    if override is None:
        out.append(f"group 0 {len(params)}")
    else:
        out.append("group 0 1")
        out.append(f"group 1 {len(params) - 1} {opt_options_text(override)}".rstrip())
    for i, p in enumerate(params):
        out.append(f"param {i} {p.dim()} {' '.join(str(d) for d in p.shape)} : {fmt(p.detach().reshape(-1))}")
    step, _ = make_optimizer(opt_name, params, defaults, override)
    for s in range(1, steps + 1):
        for i, p in enumerate(params):
            if (s, i) in MISSING:
                p.grad = None
                out.append(f"grad {s} {i} none")
            else:
                g = torch.randn(p.shape, generator=gen).to(tdtype)
                p.grad = g
                out.append(f"grad {s} {i} : {fmt(g.reshape(-1))}")
        step()
        for i, p in enumerate(params):
            out.append(f"value {s} {i} : {fmt(p.detach().reshape(-1))}")
            if opt_name in STATE_RECORDS and p in state_of(step):
                for key in STATE_RECORDS[opt_name]:
                    out.append(f"state {s} {i} {key} : {fmt(state_of(step)[p][key].reshape(-1))}")
    out.append("end")


# ---- scheduler cases ------------------------------------------------------------------------
S = torch.optim.lr_scheduler
SWA = torch.optim.swa_utils
# name: (optimizer, its options, lrs per group, steps, make(opt) -> scheduler, metrics or None)
PLATEAU_METRICS = [1.0, 0.9, 0.85, 0.86, 0.86, 0.87, 0.849, 0.848, 0.8, 0.81, 0.82, 0.83, 0.84, 0.85, 0.6,
                   0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.59995, 0.6, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5,
                   0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
SCHED_CASES = {
    "step_lr": ("SGD", {}, [0.1, 0.05], 40, lambda o: S.StepLR(o, step_size=7, gamma=0.5), None),
    "multistep_lr": ("SGD", {}, [0.1, 0.05], 40, lambda o: S.MultiStepLR(o, [5, 12, 12, 30], gamma=0.3), None),
    "constant_lr": ("SGD", {}, [0.1, 0.05], 30, lambda o: S.ConstantLR(o, factor=0.5, total_iters=8), None),
    "linear_lr_warmup": ("SGD", {}, [0.1, 0.05], 30,
                         lambda o: S.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=10), None),
    "linear_lr_decay": ("SGD", {}, [0.1], 30,
                        lambda o: S.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=15), None),
    "exponential_lr": ("SGD", {}, [0.1, 0.05], 40, lambda o: S.ExponentialLR(o, gamma=0.93), None),
    "cosine_lr": ("SGD", {}, [0.1, 0.05], 45, lambda o: S.CosineAnnealingLR(o, T_max=10, eta_min=0.001), None),
    "cosine_lr_zero_min": ("SGD", {}, [0.1], 30, lambda o: S.CosineAnnealingLR(o, T_max=25), None),
    "warm_restarts_tmult2": ("SGD", {}, [0.1, 0.05], 50,
                             lambda o: S.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=1e-4), None),
    "warm_restarts_tmult1": ("SGD", {}, [0.1], 40, lambda o: S.CosineAnnealingWarmRestarts(o, T_0=7), None),
    # step(epoch) with fractional epochs (per-batch annealing), a jump back and one ahead; the
    # "metric" records carry the epochs.
    "warm_restarts_fractional": ("SGD", {}, [0.1, 0.05], 40,
                                 lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001),
                                 [k / 4 for k in range(1, 37)] + [2.5, 30.75, 7.0, 100.125]),
    "warm_restarts_fractional_tmult1": ("SGD", {}, [0.1], 20, lambda o: S.CosineAnnealingWarmRestarts(o, T_0=2),
                                        [k / 3 for k in range(1, 17)] + [0.5, 11.9, 3.0, 1.999]),
    "polynomial_lr": ("SGD", {}, [0.1, 0.05], 30, lambda o: S.PolynomialLR(o, total_iters=20, power=2.0), None),
    "polynomial_lr_default": ("SGD", {}, [0.1], 10, lambda o: S.PolynomialLR(o), None),
    "lambda_lr": ("SGD", {}, [0.1, 0.05], 30,
                  lambda o: S.LambdaLR(o, [lambda e: 0.95 ** e, lambda e: 1.0 / (e + 1)]), None),
    "multiplicative_lr": ("SGD", {}, [0.1, 0.05], 30,
                          lambda o: S.MultiplicativeLR(o, [lambda e: 0.95, lambda e: 1.0 - 0.01 * e]), None),
    "chained_warmup_decay": (
        "SGD", {}, [0.1, 0.05], 30,
        lambda o: S.ChainedScheduler([S.ConstantLR(o, factor=0.2, total_iters=6), S.ExponentialLR(o, gamma=0.9),
                                      S.StepLR(o, step_size=7, gamma=0.5)]), None),
    "one_cycle_cos": ("SGD", {"momentum": 0.9}, [0.1, 0.05], 50,
                      lambda o: S.OneCycleLR(o, max_lr=[0.5, 0.2], total_steps=50), None),
    "one_cycle_linear_three_phase_adam": (
        "Adam", {}, [0.001], 40,
        lambda o: S.OneCycleLR(o, max_lr=0.01, total_steps=40, pct_start=0.25, anneal_strategy="linear",
                               three_phase=True, div_factor=10.0, final_div_factor=100.0), None),
    "cyclic_triangular": ("SGD", {"momentum": 0.9}, [0.1, 0.05], 40,
                          lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.05], step_size_up=5), None),
    "cyclic_triangular2": ("SGD", {"momentum": 0.9}, [0.1], 40,
                           lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4, step_size_down=6,
                                                mode="triangular2", base_momentum=0.7, max_momentum=0.95), None),
    "cyclic_exp_range_no_momentum": ("SGD", {}, [0.1], 40,
                                     lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3,
                                                          mode="exp_range", gamma=0.97, cycle_momentum=False), None),
    "sequential_linear_cosine": (
        "SGD", {}, [0.1, 0.05], 35,
        lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, total_iters=5),
                                     S.CosineAnnealingLR(o, T_max=20)], milestones=[5]), None),
    "sequential_three": (
        "SGD", {}, [0.1], 30,
        lambda o: S.SequentialLR(o, [S.ConstantLR(o, factor=0.5, total_iters=4), S.ExponentialLR(o, gamma=0.9),
                                     S.StepLR(o, step_size=3, gamma=0.5)], milestones=[4, 12]), None),
    "sequential_warm_restarts": (
        "SGD", {}, [0.1], 30,
        lambda o: S.SequentialLR(o, [S.ExponentialLR(o, gamma=0.8),
                                     S.CosineAnnealingWarmRestarts(o, T_0=6, T_mult=2)], milestones=[4]), None),
    "swalr_cos": ("SGD", {}, [0.1, 0.05], 15, lambda o: SWA.SWALR(o, swa_lr=[0.01, 0.2], anneal_epochs=6), None),
    "swalr_linear": ("SGD", {}, [0.1], 12,
                     lambda o: SWA.SWALR(o, swa_lr=0.02, anneal_epochs=4, anneal_strategy="linear"), None),
    "swalr_no_annealing": ("SGD", {}, [0.1, 0.05], 6, lambda o: SWA.SWALR(o, swa_lr=0.03, anneal_epochs=0), None),
    "plateau_min_rel": ("SGD", {}, [0.1, 0.05], len(PLATEAU_METRICS),
                        lambda o: S.ReduceLROnPlateau(o, factor=0.5, patience=2, cooldown=1, min_lr=[0.01, 0.001]),
                        PLATEAU_METRICS),
    "plateau_max_abs": ("SGD", {}, [0.1], len(PLATEAU_METRICS),
                        lambda o: S.ReduceLROnPlateau(o, mode="max", threshold_mode="abs", threshold=0.05,
                                                      patience=3, factor=0.3),
                        [-m for m in PLATEAU_METRICS]),
}


def write_scheduler_case(out, name, spec):
    opt_name, opt_kw, lrs, steps, make, metrics = spec
    params = [torch.zeros(1, requires_grad=True) for _ in lrs]
    groups = [{"params": [p], "lr": lr} for p, lr in zip(params, lrs)]
    opt = TORCH_OPT[opt_name](groups, lr=lrs[0], **opt_kw)
    sched = make(opt)
    cycles = isinstance(sched, (S.OneCycleLR, S.CyclicLR)) and sched.cycle_momentum

    def momenta():
        return [g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups]

    out.append(f"case {name}")
    out.append(f"optimizer {opt_name} {' '.join(f'{k}={repr(float(v))}' for k, v in opt_kw.items())}".rstrip())
    out.append(f"group_lrs {fmt(lrs)}")
    out.append(f"lr 0 : {fmt(g['lr'] for g in opt.param_groups)}")
    if cycles:
        out.append(f"momentum 0 : {fmt(momenta())}")
    for s in range(1, steps + 1):
        opt.step()
        if metrics is not None:
            sched.step(metrics[s - 1])
            out.append(f"metric {s} : {repr(float(metrics[s - 1]))}")
        else:
            sched.step()
        out.append(f"lr {s} : {fmt(g['lr'] for g in opt.param_groups)}")
        if cycles:
            out.append(f"momentum {s} : {fmt(momenta())}")
    out.append("end")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--out-dir", default=os.path.join(here, "..", "tests", "data", "optim"))
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    gen = torch.Generator().manual_seed(SEED)
    if not TORCH2:
        check_nadam_transcription(gen)

    warnings.simplefilter("ignore")  # PyTorch's notes about step order and the epoch argument

    header = [f"# Written by tools/gen_optim_golden.py with PyTorch {torch.__version__}; do not edit."]
    out = ["ember-optim-golden 1"] + header
    for name, spec in OPT_CASES.items():
        write_optimizer_case(out, gen, name, spec)
    out.append(f"total {len(OPT_CASES)}")
    with open(os.path.join(args.out_dir, "optimizers.txt"), "w") as f:
        f.write("\n".join(out) + "\n")

    out = ["ember-sched-golden 1"] + header
    for name, spec in SCHED_CASES.items():
        write_scheduler_case(out, name, spec)
    out.append(f"total {len(SCHED_CASES)}")
    with open(os.path.join(args.out_dir, "schedulers.txt"), "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {len(OPT_CASES)} optimiser and {len(SCHED_CASES)} scheduler cases to {args.out_dir}")


if __name__ == "__main__":
    main()
