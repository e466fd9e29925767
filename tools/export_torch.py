#!/usr/bin/python3
"""Export a PyTorch model's weights as safetensors, for Ember's nn::load.

Runs with Debian's python3-torch (`apt-get install python3-torch`, then `/usr/bin/python3`);
it needs nothing else (the safetensors writer is below, in plain Python). Ember's build and
tests never run it.

    # From Python: the model's state_dict, keys unchanged ("0.weight", "layers.1.norm1.bias").
    import sys; sys.path.insert(0, "tools")
    from export_torch import export
    export(model, "model.safetensors")

    # From the shell: a file written by torch.save (a state_dict, or a whole module), or a
    # checkpoint dict that holds the state_dict under a key (--key model_state_dict).
    /usr/bin/python3 tools/export_torch.py model.pt model.safetensors [--key KEY]

    # Rewrites Ember's committed interchange fixtures (tests/data/torch_models/).
    /usr/bin/python3 tools/export_torch.py --fixtures [DIR]

Then in C++, with the same architecture built from Ember's modules:

    nn::load(*model, "model.safetensors");   // strict: every missing/unexpected key in one error

The file follows the safetensors format: an 8-byte little-endian header length, a JSON header
(name -> dtype, shape, data_offsets; "__metadata__" -> string map) padded with spaces to a
multiple of 8, then the raw little-endian data. Tensors are laid out by decreasing element
size, then name, as the reference writer does, so that each is aligned for a zero-copy load.
"""
import argparse
import json
import os
import struct
import sys

import torch

DTYPES = {  # torch dtype -> (safetensors name, element size)
    torch.float64: ("F64", 8), torch.float32: ("F32", 4), torch.float16: ("F16", 2),
    torch.bfloat16: ("BF16", 2), torch.int64: ("I64", 8), torch.int32: ("I32", 4),
    torch.int8: ("I8", 1), torch.uint8: ("U8", 1), torch.bool: ("BOOL", 1),
}  # no int16: safetensors has I16, but Ember has no 16-bit integer dtype to load it into


def tensor_bytes(t):
    t = t.detach().to("cpu").contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: take the raw 16-bit patterns
        t = t.view(torch.int16)
    data = t.numpy().tobytes()
    if sys.byteorder != "little":
        raise SystemExit("export_torch.py: a big-endian host would need byte swapping")
    return data


def save_safetensors(path, tensors, metadata=None):
    """Writes {name: tensor} (and an optional {str: str} metadata map) to `path`."""
    items = []
    for name, t in tensors.items():
        if not isinstance(name, str) or not isinstance(t, torch.Tensor):
            raise TypeError(f"export_torch.py: entry {name!r} is not a named tensor")
        if t.dtype not in DTYPES:
            raise TypeError(f"export_torch.py: tensor {name!r} has dtype {t.dtype}, which Ember cannot load "
                            "(convert it first, e.g. int16 -> int32)")
        items.append((name, t))
    items.sort(key=lambda it: (-DTYPES[it[1].dtype][1], it[0]))
    header, chunks, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, t in items:
        data = tensor_bytes(t)
        header[name] = {"dtype": DTYPES[t.dtype][0], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as f:  # write then rename, so a failed export leaves no half file
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for c in chunks:
                f.write(c)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def export(model_or_state_dict, path, metadata=None):
    """Writes a module's state_dict (parameters and buffers, PyTorch's key names) or a
    state_dict itself to `path` as safetensors. Tensors that share storage (tied weights) are
    written once each under every name, as copies."""
    sd = model_or_state_dict
    if isinstance(sd, torch.nn.Module):
        sd = sd.state_dict()
    meta = {"format": "pt", "exporter": "ember/tools/export_torch.py", "torch": torch.__version__}
    meta.update(metadata or {})
    save_safetensors(path, {k: v.clone() for k, v in sd.items()}, meta)


# ---- fixtures for tests/io/test_torch_models.cpp ------------------------------------------------
# Each fixture is <name>.safetensors (the model's state_dict, as export() writes it) and
# <name>_io.safetensors (the inputs and PyTorch's outputs). The C++ test builds the same
# architecture from Ember's modules, loads the weights strictly and compares the outputs.


def fixture_mlp():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16), torch.nn.Tanh(),
                                torch.nn.Linear(16, 4))
    x = torch.randn(5, 8)
    return model.eval(), {"input": x, "output": model(x)}


def fixture_cnn():
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 12, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(12), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(12, 5))
    # A few training-mode batches give the running statistics values far from 0 and 1.
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(4, 3, 12, 12) * 2 + 0.5)
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.randn(2, 3, 12, 12)
    io = {"input": x, "output": model.eval()(x)}
    # One more training-mode batch, from the exported state: its output (batch statistics) and
    # the running statistics and counters it leaves behind.
    model.train()
    xt = torch.randn(3, 3, 12, 12)
    io["train.input"] = xt
    io["train.output"] = model(xt)
    for k, v in model.state_dict().items():
        if "running" in k or "num_batches" in k:
            io["train." + k] = v.clone()
    model.load_state_dict(weights)
    return model.eval(), io


class LstmModel(torch.nn.Module):
    """Two-layer batch-first LSTM and a linear head on every step."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(6, 10, num_layers=2, batch_first=True)
        self.head = torch.nn.Linear(10, 3)

    def forward(self, x, h0, c0):
        y, (h, c) = self.lstm(x, (h0, c0))
        return self.head(y), h, c


def fixture_lstm():
    model = LstmModel().eval()
    x, h0, c0 = torch.randn(3, 7, 6), torch.randn(2, 3, 10) * 0.5, torch.randn(2, 3, 10) * 0.5
    y, h, c = model(x, h0, c0)
    return model, {"input": x, "h0": h0, "c0": c0, "output": y, "h_n": h, "c_n": c}


class BiLstmModel(torch.nn.Module):
    """A bidirectional two-layer LSTM (sequence first, no initial state)."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(5, 7, num_layers=2, bidirectional=True)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return y, h, c


def fixture_lstm_bidir():
    model = BiLstmModel().eval()
    x = torch.randn(6, 2, 5)
    y, h, c = model(x)
    return model, {"input": x, "output": y, "h_n": h, "c_n": c}


def fixture_transformer():
    nn = torch.nn
    layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0)
    model = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(32), enable_nested_tensor=False).eval()
    x = torch.randn(9, 2, 32)  # (S, N, E)
    causal = torch.triu(torch.full((9, 9), float("-inf")), diagonal=1)
    pad = torch.zeros(2, 9, dtype=torch.bool)
    pad[1, 6:] = True  # the second sequence is 6 long
    # Grad mode stays on so that PyTorch takes its reference (non-fused) path.
    io = {"input": x, "output": model(x), "causal_mask": causal, "output_causal": model(x, mask=causal),
          "padding_mask": pad, "output_padded": model(x, src_key_padding_mask=pad)}
    return model, io


def fixture_transformer_prenorm():
    """The other layout: batch first, pre-norm, GELU, no final norm."""
    nn = torch.nn
    layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, activation="gelu", batch_first=True,
                                       norm_first=True)
    model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    x = torch.randn(2, 7, 16)  # (N, S, E)
    pad = torch.zeros(2, 7, dtype=torch.bool)
    pad[0, 5:] = True
    return model, {"input": x, "output": model(x), "padding_mask": pad,
                   "output_padded": model(x, src_key_padding_mask=pad)}


FIXTURES = {"mlp": fixture_mlp, "cnn": fixture_cnn, "lstm": fixture_lstm, "lstm_bidir": fixture_lstm_bidir,
            "transformer": fixture_transformer, "transformer_prenorm": fixture_transformer_prenorm}


def write_fixtures(out):
    os.makedirs(out, exist_ok=True)
    for name, make in FIXTURES.items():
        torch.manual_seed(sum(name.encode()))  # per fixture, so adding one changes no other
        model, io = make()
        export(model, os.path.join(out, name + ".safetensors"), {"fixture": name})
        save_safetensors(os.path.join(out, name + "_io.safetensors"),
                         {k: v.detach().contiguous() for k, v in io.items()}, {"torch": torch.__version__})
        print(f"{name}: {len(model.state_dict())} tensors, outputs {[k for k in io if 'output' in k]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", nargs="?", help="a file written by torch.save: a state_dict, a module or a dict")
    ap.add_argument("target", nargs="?", help="the .safetensors file to write")
    ap.add_argument("--key", help="the entry of a checkpoint dict that holds the state_dict")
    ap.add_argument("--fixtures", nargs="?", const=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                                                 "tests", "data", "torch_models"),
                    help="write Ember's test fixtures (default: tests/data/torch_models)")
    a = ap.parse_args()
    if a.fixtures:
        write_fixtures(a.fixtures)
        return
    if not a.source or not a.target:
        ap.error("give SOURCE and TARGET, or --fixtures")
    # A whole pickled module needs weights_only=False (torch >= 2.6 defaults to True); only
    # load files you trust, as with any torch.load of a module.
    try:
        obj = torch.load(a.source, map_location="cpu", weights_only=False)
    except TypeError:  # torch < 1.13 has no weights_only
        obj = torch.load(a.source, map_location="cpu")
    if a.key:
        obj = obj[a.key]
    if not isinstance(obj, (torch.nn.Module, dict)):
        ap.error(f"{a.source} holds a {type(obj).__name__}, not a state_dict or a module (use --key?)")
    export(obj, a.target)
    print(f"wrote {a.target}")


if __name__ == "__main__":
    main()
