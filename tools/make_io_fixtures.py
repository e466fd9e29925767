#!/usr/bin/env python3
"""Golden files for Ember's model-file tests, written by the reference Python packages.

    python3 -m venv /tmp/iovenv && /tmp/iovenv/bin/pip install numpy safetensors
    /tmp/iovenv/bin/python tools/make_io_fixtures.py            # rewrites tests/data/io/
    EMBER_IO_EXPORT_DIR=/tmp/ember-io build-io/tests/io/ember-tests-io -tc='*export*'
    /tmp/iovenv/bin/python tools/make_io_fixtures.py --check /tmp/ember-io

The first form writes the fixtures that tests/io/*.cpp read (the tests never run Python).
The second checks files that Ember wrote with the reference readers: safetensors'
deserialize, np.load, and zipfile's CRC check. Developer tool only; CI does not run it.

Element i (row-major) of every fixture array is value(dtype, i) below; tests/io/io_test_util.hpp
computes the same values.
"""
import os
import struct
import sys
import zipfile

import numpy as np
import safetensors
from safetensors import TensorSpec, serialize

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "io")


def values(kind, n):
    i = np.arange(n, dtype=np.int64)
    if kind in ("f64", "f32", "f16", "bf16"):
        return (i - 3) * 0.25
    return {
        "i64": i * 1000003 - 7,
        "i32": i * 7919 - 50,
        "i8": (i * 37) % 256 - 128,
        "u8": (i * 37) % 256,
        "bool": i % 3 == 0,
    }[kind]


NP = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "i64": np.int64, "i32": np.int32,
      "i8": np.int8, "u8": np.uint8, "bool": np.bool_}


def array(kind, shape):
    n = int(np.prod(shape)) if shape else 1
    return values(kind, n).astype(NP[kind]).reshape(shape)


def bf16_bytes(shape):
    n = int(np.prod(shape)) if shape else 1
    f = values("bf16", n).astype(np.float32)  # exact in bf16: the upper half of the f32 bits
    return (f.view(np.uint32) >> 16).astype("<u2").tobytes()


SAFETENSORS = [  # name, kind, shape
    ("f64", "f64", (2, 3)), ("f32", "f32", (4,)), ("f32_scalar", "f32", ()), ("f16", "f16", (2, 2)),
    ("bf16", "bf16", (3,)), ("i64", "i64", (2, 2)), ("i32", "i32", (5,)), ("i8", "i8", (6,)),
    ("u8", "u8", (2, 3)), ("bool", "bool", (7,)), ("empty", "f32", (0, 3)),
]
ST_DTYPE = {"f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16", "i64": "int64",
            "i32": "int32", "i8": "int8", "u8": "uint8", "bool": "bool"}
NPY = [  # file, kind, shape
    ("f64", "f64", (2, 3)), ("f32", "f32", (4,)), ("f16", "f16", (2, 2)), ("i64", "i64", (3,)),
    ("i32", "i32", (2, 2, 2)), ("i8", "i8", (5,)), ("u8", "u8", (2, 3)), ("bool", "bool", (7,)),
    ("scalar_f32", "f32", ()), ("empty_f32", "f32", (0, 3)),
]


def write_fixtures():
    os.makedirs(OUT, exist_ok=True)
    keep = []  # the buffers TensorSpec points into must outlive serialize()
    specs = {}
    for name, kind, shape in SAFETENSORS:
        raw = bf16_bytes(shape) if kind == "bf16" else array(kind, shape).tobytes()
        buf = np.frombuffer(raw, dtype=np.uint8).copy() if raw else np.zeros(1, np.uint8)
        keep.append(buf)
        specs[name] = TensorSpec(dtype=ST_DTYPE[kind], shape=list(shape), data_ptr=buf.ctypes.data,
                                 data_len=len(raw))
    # One metadata entry: the reference writer keeps metadata in a hash map, so the order of
    # several entries changes from run to run, and only a single one has canonical bytes.
    blob = serialize(specs, metadata={"format": "np"})
    with open(os.path.join(OUT, "reference.safetensors"), "wb") as f:
        f.write(bytes(blob))

    for name, kind, shape in NPY:
        np.save(os.path.join(OUT, name + ".npy"), array(kind, shape))
    np.save(os.path.join(OUT, "fortran_f32.npy"), np.asfortranarray(array("f32", (3, 4))))
    for version in ((2, 0), (3, 0)):
        with open(os.path.join(OUT, "v%d_f32.npy" % version[0]), "wb") as f:
            np.lib.format.write_array(f, array("f32", (2, 3)), version=version)

    arrays = {"a": array("f32", (2, 3)), "b": array("i64", (5,)), "c/d": array("bool", (3,))}
    np.savez(os.path.join(OUT, "savez.npz"), **arrays)
    np.savez_compressed(os.path.join(OUT, "savez_compressed.npz"), **arrays)
    print("wrote", sorted(os.listdir(OUT)), "with numpy", np.__version__, "safetensors", safetensors.__version__)


def expect_values(name, arr_or_bytes, shape):
    """Arrays the test names '<kind>_<k>' hold values(kind, i); bf16 ones arrive as raw bytes."""
    kind = name.rsplit("_", 1)[0]
    if kind == "bf16":
        assert arr_or_bytes == bf16_bytes(tuple(shape)), name + ": bf16 bytes differ"
    elif kind in NP:
        want = array(kind, tuple(shape))
        got = arr_or_bytes if isinstance(arr_or_bytes, np.ndarray) else np.frombuffer(
            arr_or_bytes, dtype=want.dtype).reshape(shape)
        assert got.dtype == want.dtype and np.array_equal(got, want), name + ": values differ"


def check(d):
    """Reads what Ember wrote (see the module docstring) with the reference tools."""
    failures = 0
    for name in sorted(os.listdir(d)):
        path = os.path.join(d, name)
        try:
            if name.endswith(".safetensors"):
                with open(path, "rb") as f:
                    raw = f.read()
                tensors = safetensors.deserialize(raw)
                for k, v in tensors:
                    expect_values(k, bytes(v["data"]), v["shape"])
                n = struct.unpack("<Q", raw[:8])[0]
                assert n % 8 == 0, "header not padded to 8"
                what = ", ".join("%s %s %s" % (k, v["dtype"], v["shape"]) for k, v in tensors)
            elif name.endswith(".npy"):
                a = np.load(path)
                what = "%s %s fortran=%s" % (a.dtype, a.shape, a.flags.f_contiguous and not a.flags.c_contiguous)
            elif name.endswith(".npz"):
                with zipfile.ZipFile(path) as z:
                    bad = z.testzip()
                    assert bad is None, "CRC error in " + bad
                with np.load(path) as z:
                    for k in z.files:
                        expect_values(k, z[k], z[k].shape)
                    what = ", ".join("%s %s %s" % (k, z[k].dtype, z[k].shape) for k in z.files)
            else:
                continue
            print("ok  ", name, ":", what)
        except Exception as e:  # noqa: BLE001 - report every file
            failures += 1
            print("FAIL", name, ":", e)
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        check(sys.argv[2])
    else:
        write_fixtures()
