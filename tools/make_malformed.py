#!/usr/bin/env python3
"""Writes tests/data/malformed/: small broken safetensors, .npy and .npz files, and
expected.txt, which says for each file which loader reads it and what its error must say.

    python3 tools/make_malformed.py

Plain python3 (no numpy, no safetensors): every byte is made here by hand. The ordinary test
suite (tests/io/test_malformed.cpp) loads every file and checks that it raises an
ember::Error naming the op, the file and the fragments listed; it also fails when a file in
the directory is not listed.
"""
import json
import os
import struct
import zlib

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "malformed")
cases = []  # (file name, loader, [fragments])


def emit(name, data, loader, *fragments):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
    cases.append((name, loader, list(fragments)))


# ---- safetensors ---------------------------------------------------------------------------

def st_raw(header: bytes, data: bytes = b"", length=None) -> bytes:
    return struct.pack("<Q", len(header) if length is None else length) + header + data


def st(header, data=b""):
    """header: a dict (dumped compactly) or raw text."""
    text = header if isinstance(header, (bytes, str)) else json.dumps(header, separators=(",", ":"))
    raw = text.encode("utf-8") if isinstance(text, str) else text
    raw += b" " * (-len(raw) % 8)
    return st_raw(raw, data)


def t(dtype="F32", shape=(1,), offsets=(0, 4)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


F4 = struct.pack("<f", 1.0)
S = "safetensors"
emit("st_empty.safetensors", b"", S, "too short for the 8-byte header length")
emit("st_short_length.safetensors", b"\x10\x00\x00", S, "file is 3 bytes", "too short")
emit("st_length_past_end.safetensors", st_raw(b"{}", length=1000), S, "header length 1000 runs past the end")
emit("st_length_over_limit.safetensors", st_raw(b"{}", length=1 << 40), S, "exceeds the limit of 100000000")
emit("st_length_max.safetensors", st_raw(b"{}", length=2**64 - 1), S, "header length 18446744073709551615")
emit("st_json_syntax.safetensors", st('{"a":{"dtype":"F32",}'), S, "JSON", "expected a string key")
emit("st_json_trailing_comma.safetensors", st('{"a":' + json.dumps(t()) + ',}', F4), S, "expected a string key")
emit("st_json_not_object.safetensors", st("[1,2]"), S, "expected '{' (an object)")
emit("st_json_after_end.safetensors", st("{} x"), S, "'x' after the end of the object")
emit("st_json_truncated.safetensors", st('{"a":'), S, "ends early")
emit("st_json_single_quotes.safetensors", st("{'a':1}"), S, "expected a string key")
emit("st_json_leading_zero.safetensors", st('{"a":{"dtype":"F32","shape":[1],"data_offsets":[00,4]}}', F4), S,
     "leading zero")
emit("st_json_nul_padding.safetensors", st_raw(b"{}\0\0\0\0\0\0"), S, "byte 0x00 after the end of the object")
emit("st_json_control_char.safetensors", st(b'{"a\x01":' + json.dumps(t()).encode() + b"}", F4), S,
     "control byte 0x01")
emit("st_json_bad_escape.safetensors", st('{"a\\q":{}}'), S, "invalid escape \\'q'")
emit("st_json_lone_surrogate.safetensors", st('{"a\\ud800":{}}'), S, "unpaired surrogate \\ud800")
emit("st_json_bad_byte.safetensors", st(b'{\xff}'), S, "expected a string key, got byte 0xff")
emit("st_name_not_utf8.safetensors", st(b'{"\xff\xfe":' + json.dumps(t()).encode() + b"}", F4), S,
     "not valid UTF-8")
emit("st_name_overlong_utf8.safetensors", st(b'{"\xc0\xaf":' + json.dumps(t()).encode() + b"}", F4), S,
     "not valid UTF-8")
emit("st_name_utf8_surrogate.safetensors", st(b'{"\xed\xa0\x80":' + json.dumps(t()).encode() + b"}", F4), S,
     "not valid UTF-8")
emit("st_duplicate_name.safetensors",
     st('{"a":' + json.dumps(t()) + ',"a":' + json.dumps(t(offsets=(4, 8))) + "}", F4 * 2), S,
     "duplicate tensor name 'a'")
emit("st_duplicate_metadata.safetensors", st('{"__metadata__":{},"__metadata__":{}}'), S,
     "duplicate key '__metadata__'")
emit("st_duplicate_metadata_key.safetensors", st('{"__metadata__":{"k":"1","k":"2"}}'), S,
     "duplicate __metadata__ key 'k'")
emit("st_metadata_not_string.safetensors", st({"__metadata__": {"k": 1}}), S, "__metadata__ value of 'k'",
     "must be a string")
emit("st_metadata_not_object.safetensors", st({"__metadata__": "x"}), S, "__metadata__ must be an object")
emit("st_entry_not_object.safetensors", st({"a": 5}), S, "tensor 'a'", "expected an object")
emit("st_unknown_dtype.safetensors", st({"a": t("F33")}, F4), S, "tensor 'a'", "unknown dtype 'F33'")
emit("st_foreign_dtype.safetensors", st({"a": t("I16", (2,))}, F4), S, "Ember has no type for the dtype 'I16'")
emit("st_dtype_not_string.safetensors", st({"a": {"dtype": 5, "shape": [1], "data_offsets": [0, 4]}}, F4), S,
     "dtype must be a string")
emit("st_missing_shape.safetensors", st({"a": {"dtype": "F32", "data_offsets": [0, 4]}}, F4), S,
     "missing field 'shape'")
emit("st_missing_offsets.safetensors", st({"a": {"dtype": "F32", "shape": [1]}}, F4), S,
     "missing field 'data_offsets'")
emit("st_field_twice.safetensors", st('{"a":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}}', F4),
     S, "field 'dtype' appears twice")
emit("st_unknown_field.safetensors", st({"a": dict(t(), foo=1)}, F4), S, "unknown field 'foo'")
emit("st_shape_not_array.safetensors", st({"a": dict(t(), shape="2")}, F4), S, "shape must be an array")
emit("st_shape_negative.safetensors", st({"a": t(shape=(-1,))}, F4), S, "non-negative integer, got -1")
emit("st_shape_fraction.safetensors", st({"a": t(shape=(1.5,))}, F4), S, "non-negative integer, got 1.5")
emit("st_shape_exponent.safetensors", st('{"a":{"dtype":"F32","shape":[1e0],"data_offsets":[0,4]}}', F4), S,
     "non-negative integer, got 1e0")
emit("st_shape_not_u64.safetensors", st({"a": t(shape=(10**20,))}, F4), S,
     "integer 100000000000000000000 does not fit in 64 bits")
emit("st_shape_over_int64.safetensors", st({"a": t(shape=(2**63,))}, F4), S, "over int64's range")
emit("st_shape_product_overflow.safetensors", st({"a": t(shape=(2**32, 2**32))}, F4), S,
     "more elements than int64 can count")
emit("st_shape_bytes_overflow.safetensors", st({"a": t(shape=(2**61,))}, F4), S, "more bytes than int64 can count")
emit("st_shape_too_many_dims.safetensors", st({"a": t(shape=(1,) * 65)}, F4), S, "more than 64 dims")
emit("st_offsets_one.safetensors", st({"a": dict(t(), data_offsets=[0])}, F4), S, "must hold 2 integers, it holds 1")
emit("st_offsets_three.safetensors", st({"a": dict(t(), data_offsets=[0, 4, 8])}, F4), S, "it holds more")
emit("st_offsets_reversed.safetensors", st({"a": t(offsets=(8, 4))}, F4 * 2), S, "[8, 4] end before they begin")
emit("st_offsets_past_region.safetensors", st({"a": t(shape=(100,), offsets=(0, 400))}, F4), S,
     "run past the end of the data region (4 bytes")
emit("st_size_mismatch.safetensors", st({"a": t(shape=(2,), offsets=(0, 4))}, F4), S,
     "hold 4 bytes, but shape [2] of F32 needs 8")
emit("st_overlap.safetensors", st({"a": t(shape=(2,), offsets=(0, 8)), "b": t(shape=(2,), offsets=(4, 12))}, F4 * 3),
     S, "tensor 'b' (data_offsets [4, 12]) overlaps tensor 'a'")
emit("st_gap.safetensors", st({"a": t(), "b": t(offsets=(8, 12))}, F4 * 3), S, "leaves a gap of 4 bytes at offset 4")
emit("st_trailing_bytes.safetensors", st({"a": t()}, F4 * 2), S, "cover 4 of the 8 bytes", "belong to no tensor")
emit("st_truncated_data.safetensors", st({"a": t(shape=(4,), offsets=(0, 16))}, F4 * 2), S,
     "run past the end of the data region (8 bytes; truncated?)")
emit("st_bool_value.safetensors", st({"a": t("BOOL", (3,), (0, 3))}, b"\x00\x01\x02"), S, "tensor 'a'",
     "bool element 2 holds the byte 2")
emit("st_metadata_loader.safetensors", st({"a": t("F32", (2,), (0, 4))}, F4), "safetensors_metadata",
     "shape [2] of F32 needs 8")
emit("st_lazy_reader.safetensors", st('{"a":'), "safetensors_file", "ends early")


# ---- .npy ----------------------------------------------------------------------------------

def npy(header, data=b"", version=(1, 0), hlen=None):
    h = header.encode("latin1") if isinstance(header, str) else header
    fmt = "<H" if version[0] == 1 else "<I"
    return b"\x93NUMPY" + bytes(version) + struct.pack(fmt, len(h) if hlen is None else hlen) + h + data


def d(descr="'<f4'", fortran="False", shape="(2,)"):
    return "{'descr': %s, 'fortran_order': %s, 'shape': %s, }\n" % (descr, fortran, shape)


N = "npy"
F8 = struct.pack("<2f", 1.0, 2.0)
emit("npy_empty.npy", b"", N, "not a .npy file")
emit("npy_bad_magic.npy", b"\x93NUMPZ\x01\x00" + b"\0" * 8, N, "not a .npy file", "magic")
emit("npy_version_4.npy", npy(d(), F8, version=(4, 0)), N, "unsupported .npy format version 4.0")
emit("npy_version_1_1.npy", npy(d(), F8, version=(1, 1)), N, "version 1.1")
emit("npy_no_length.npy", b"\x93NUMPY\x02\x00\x10", N, "too short for the header length")
emit("npy_length_past_end.npy", npy(d(), hlen=1000), N, "header length 1000 runs past the end")
emit("npy_length_over_limit.npy", npy(d(), version=(2, 0), hlen=2**31), N, "exceeds the limit")
emit("npy_not_dict.npy", npy("[1, 2]\n"), N, "expected '{'")
emit("npy_missing_descr.npy", npy("{'fortran_order': False, 'shape': (2,), }\n", F8), N, "missing key 'descr'")
emit("npy_missing_shape.npy", npy("{'descr': '<f4', 'fortran_order': False}\n", F8), N, "missing key 'shape'")
emit("npy_extra_key.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'foo': 1}\n", F8), N,
     "unknown key 'foo'")
emit("npy_duplicate_key.npy", npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}\n", F8),
     N, "key 'descr' appears twice")
emit("npy_big_endian.npy", npy(d("'>f4'"), F8), N, "'>f4' is big-endian")
emit("npy_unsupported_descr.npy", npy(d("'<i2'"), F8), N, "descr '<i2' has no Ember dtype")
emit("npy_structured_descr.npy", npy(d("[('a', '<f4')]"), F8), N, "expected a quoted string")
emit("npy_fortran_not_bool.npy", npy(d(fortran="0"), F8), N, "expected True or False")
emit("npy_shape_list.npy", npy(d(shape="[2]"), F8), N, "expected '('")
emit("npy_shape_int.npy", npy(d(shape="(2)"), F8), N, "a number, not a tuple")
emit("npy_shape_negative.npy", npy(d(shape="(-2,)"), F8), N, "expected a non-negative integer")
emit("npy_shape_overflow.npy", npy(d(shape="(99999999999999999999,)"), F8), N, "does not fit in int64")
emit("npy_shape_product_overflow.npy", npy(d(shape="(4294967296, 4294967296)"), F8), N,
     "more elements than int64 can count")
emit("npy_shape_too_many_dims.npy", npy(d(shape="(" + "1, " * 65 + ")"), F8), N, "more than 64 dims")
emit("npy_truncated_data.npy", npy(d(shape="(4,)"), F8), N, "data is 8 bytes, but shape [4] of <f4 needs 16",
     "truncated")
emit("npy_trailing_data.npy", npy(d(), F8 + b"xx"), N, "data is 10 bytes, but shape [2] of <f4 needs 8")
emit("npy_bool_value.npy", npy(d("'|b1'", shape="(3,)"), b"\x00\x01\x05"), N, "bool element 2 holds the byte 5")
emit("npy_after_dict.npy", npy(d().rstrip("\n") + " x\n", F8), N, "unexpected data after the dict")
emit("npy_string_escape.npy", npy(d("'<f\\x34'"), F8), N, "unsupported character in a string")
emit("npy_unterminated_string.npy", npy("{'descr\n"), N, "unsupported character in a string")
emit("npy_truncated_header.npy", npy("{'descr': '<f4'"), N, "ends early")


# ---- .npz ----------------------------------------------------------------------------------

GOOD_NPY = npy(d(), F8)


def local(name, data, method=0, crc=None, csize=None, usize=None, flags=0, raw_name=None):
    n = raw_name if raw_name is not None else name.encode()
    return struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, flags, method, 0, 33,
                       zlib.crc32(data) if crc is None else crc, len(data) if csize is None else csize,
                       len(data) if usize is None else usize, len(n), 0) + n


def central(name, offset, data, method=0, crc=None, csize=None, usize=None, flags=0, disk=0, extra=b"",
            raw_name=None):
    n = raw_name if raw_name is not None else name.encode()
    return struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, flags, method, 0, 33,
                       zlib.crc32(data) if crc is None else crc, len(data) if csize is None else csize,
                       len(data) if usize is None else usize, len(n), len(extra), 0, disk, 0, 0, offset) + n + extra


def eocd(count, cd_size, cd_offset, disk=0):
    return struct.pack("<IHHHHIIH", 0x06054B50, disk, 0, count, count, cd_size, cd_offset, 0)


def zip_of(members, compress=False):
    """members: list of (name, uncompressed bytes). A well-formed archive."""
    body, cd = b"", b""
    for name, data in members:
        stored = data
        method = 0
        if compress:
            c = zlib.compressobj(6, zlib.DEFLATED, -15)
            stored = c.compress(data) + c.flush()
            method = 8
        cd += central(name, len(body), stored, method, crc=zlib.crc32(data), usize=len(data))
        body += local(name, stored, method, crc=zlib.crc32(data), usize=len(data)) + stored
    return body + cd + eocd(len(members), len(cd), len(body))


def one_member(name="a.npy", payload=GOOD_NPY, lkw=None, ckw=None, data=None):
    """One stored member whose headers take the given overrides; `data` replaces the bytes."""
    body_data = payload if data is None else data
    lh = local(name, payload, **(lkw or {}))
    cd = central(name, 0, payload, **(ckw or {}))
    return lh + body_data + cd + eocd(1, len(cd), len(lh) + len(body_data))


def deflated(data):
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


Z = "npz"
emit("npz_empty.npz", b"", Z, "too short for a zip archive")
emit("npz_no_end_record.npz", b"PK\x03\x04" + b"\0" * 60, Z, "no end of central directory record")
emit("npz_truncated.npz", zip_of([("a.npy", GOOD_NPY)])[:-10], Z, "no end of central directory record")
emit("npz_cd_out_of_bounds.npz", eocd(1, 46, 5000), Z, "central directory [5000, +46) runs past")
emit("npz_too_many_entries.npz", b"\0" * 46 + eocd(1000, 46, 0), Z, "cannot hold 1000 entries")
emit("npz_bad_cd_signature.npz", b"\0" * 46 + eocd(1, 46, 0), Z, "entry 0 at offset 0 has a bad signature")
emit("npz_multi_disk.npz", zip_of([("a.npy", GOOD_NPY)])[:-22] + eocd(1, 0, 0, disk=1), Z, "multi-disk")
arch = zip_of([("a.npy", GOOD_NPY)])
emit("npz_cd_trailing_bytes.npz",
     arch[:-22] + b"\0" * 4 + eocd(1, len(arch) - 22 - (30 + 5 + len(GOOD_NPY)) + 4, 30 + 5 + len(GOOD_NPY)), Z,
     "central directory has 4 bytes after its 1 entries")
emit("npz_local_offset_bad.npz", one_member(ckw={"csize": len(GOOD_NPY)}).replace(
    struct.pack("<I", 0) + b"a.npy", struct.pack("<I", 100000) + b"a.npy"), Z,
    "local header offset 100000 is not before the central directory")
lh_bad = one_member()
emit("npz_local_bad_signature.npz", b"XX" + lh_bad[2:], Z, "no local header at offset 0")
emit("npz_local_name_mismatch.npz", one_member(lkw={"raw_name": b"b.npy"}), Z, "local header names it 'b.npy'")
emit("npz_local_method_mismatch.npz", one_member(lkw={"method": 8}), Z, "local header says method 8")
emit("npz_local_sizes_mismatch.npz", one_member(lkw={"usize": 7}), Z, "local header sizes")
emit("npz_local_crc_mismatch.npz", one_member(lkw={"crc": 1}), Z, "local header CRC 0x00000001")
emit("npz_unsupported_method.npz", one_member(lkw={"method": 12}, ckw={"method": 12}), Z,
     "uses compression method 12")
emit("npz_encrypted.npz", one_member(lkw={"flags": 1}, ckw={"flags": 1}), Z, "is encrypted")
emit("npz_name_not_utf8.npz", one_member(lkw={"raw_name": b"\xff.npy"}, ckw={"raw_name": b"\xff.npy"}), Z,
     "the name is not UTF-8")
emit("npz_stored_size_mismatch.npz", one_member(lkw={"usize": 1}, ckw={"usize": 1}), Z,
     "is stored, but its compressed size")
emit("npz_crc_mismatch_stored.npz", one_member(lkw={"crc": 7}, ckw={"crc": 7}), Z,
     "CRC-32 mismatch: the directory says 0x00000007")
comp = deflated(GOOD_NPY)
emit("npz_crc_mismatch_deflated.npz", one_member(payload=comp, lkw={"method": 8, "crc": 9, "usize": len(GOOD_NPY)},
                                                 ckw={"method": 8, "crc": 9, "usize": len(GOOD_NPY)}), Z,
     "CRC-32 mismatch")
kw = {"method": 8, "crc": zlib.crc32(GOOD_NPY)}
emit("npz_bomb_declared.npz", one_member(payload=comp, lkw=dict(kw, usize=10**9), ckw=dict(kw, usize=10**9)), Z,
     "declares 1000000000 bytes from", "more than deflate can produce")
emit("npz_inflates_more.npz", one_member(payload=comp, lkw=dict(kw, usize=50), ckw=dict(kw, usize=50)), Z,
     "inflates to more than the declared 50 bytes")
emit("npz_inflates_less.npz", one_member(payload=comp, lkw=dict(kw, usize=500), ckw=dict(kw, usize=500)), Z,
     "but the directory declares 500")
junk = bytes([0xFF] * 40)
emit("npz_corrupt_deflate.npz", one_member(payload=junk, lkw=dict(kw, usize=len(GOOD_NPY)),
                                           ckw=dict(kw, usize=len(GOOD_NPY))), Z, "corrupt deflate data")
emit("npz_truncated_deflate.npz", one_member(payload=comp[:20], lkw=dict(kw, usize=len(GOOD_NPY)),
                                             ckw=dict(kw, usize=len(GOOD_NPY))), Z, "deflate data ends early")
emit("npz_after_deflate_end.npz", one_member(payload=comp + b"tail", lkw=dict(kw, usize=len(GOOD_NPY)),
                                             ckw=dict(kw, usize=len(GOOD_NPY))), Z,
     "4 bytes follow the end of its deflate stream")
emit("npz_member_into_cd.npz", one_member(lkw={"csize": 400, "usize": 400}, ckw={"csize": 400, "usize": 400}), Z,
     "run into the central directory")
# Member 'a' claims all the bytes up to the directory, so member 'b' lies inside it.
la = local("a.npy", b"", csize=0, usize=0)
lb = local("b.npy", GOOD_NPY) + GOOD_NPY
span = lb
cd = central("a.npy", 0, span, crc=zlib.crc32(span)) + central("b.npy", len(la), GOOD_NPY)
la = local("a.npy", span)
emit("npz_overlap.npz", la + lb + cd + eocd(2, len(cd), len(la) + len(lb)), Z, "member 'a.npy' and member 'b.npy' overlap")
emit("npz_duplicate_name.npz", zip_of([("a.npy", GOOD_NPY), ("a.npy", GOOD_NPY)]), Z, "duplicate member 'a.npy'")
emit("npz_not_npy_member.npz", zip_of([("a.txt", b"hello")]), Z, "member 'a.txt' is not an .npy file")
emit("npz_bad_npy_inside.npz", zip_of([("a.npy", b"not numpy at all")]), Z, ".npz/a.npy'", "not a .npy file")
emit("npz_bad_npy_inside_deflated.npz", zip_of([("x.npy", npy(d(shape="(9,)"), F8))], compress=True), Z,
     "x.npy'", "data is 8 bytes, but shape [9] of <f4 needs 36")
emit("npz_extra_overrun.npz", one_member(ckw={"extra": struct.pack("<HH", 0x0001, 20) + b"\0" * 4}), Z,
     "extra field 0x0001 of 20 bytes runs past the extra data")
emit("npz_zip64_extra_short.npz", one_member(ckw={"usize": 0xFFFFFFFF, "extra": struct.pack("<HH", 0x0001, 4) +
                                                  b"\0" * 4}), Z, "zip64 extra field lacks the uncompressed size")
arch = zip_of([("a.npy", GOOD_NPY)])
locator = struct.pack("<IIQI", 0x07064B50, 0, 10**6, 1)
emit("npz_zip64_bad_locator.npz", arch[:-22] + locator + arch[-22:], Z, "zip64 end record offset 1000000 is out of bounds")

with open(os.path.join(OUT, "expected.txt"), "w") as f:
    f.write("# file\tloader\tfragments... (tab-separated); written by tools/make_malformed.py\n")
    for name, loader, frags in cases:
        f.write("\t".join([name, loader] + frags) + "\n")
print("wrote %d files to %s" % (len(cases), os.path.normpath(OUT)))
