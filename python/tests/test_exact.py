"""get_tensor and get_rows give f64, integer and bool tensors back exactly, in their own dtype:
float32 would round I64 2^53 + 1 to 2^53 and F64 1e300 to infinity. The files are written here
(safetensors by test_formats' writer, GGUF by a few lines below) from numpy arrays, which are
what must come back."""

import struct

import numpy as np
import pytest

import tensormap
from test_formats import write_safetensors

P53 = 2 ** 53

# safetensors dtype -> the array written; get_tensor must return it, dtype and all.
ARRAYS = {
    "I64": np.array([[P53 + 1, -(P53 + 1)], [2 ** 63 - 1, -2 ** 63]], "<i8"),
    "F64": np.array([1e300, -1e-300, 0.1], "<f8"),
    "I32": np.array([2 ** 31 - 1, -2 ** 31], "<i4"),
    "I16": np.array([2 ** 15 - 1, -2 ** 15], "<i2"),
    "I8": np.array([127, -128], "|i1"),
    "U64": np.array([2 ** 64 - 1, P53 + 1], "<u8"),
    "U32": np.array([2 ** 32 - 1, 2 ** 24 + 1], "<u4"),
    "U16": np.array([[65535, 1], [2, 3]], "<u2"),
    "U8": np.array([0, 1, 200, 255], "|u1"),
}


def test_safetensors_integers_and_f64_come_back_exactly(tmp_path):
    path = tmp_path / "exact.safetensors"
    tensors = {d: (d, a.shape, a.tobytes()) for d, a in ARRAYS.items()}
    tensors["BOOL"] = ("BOOL", (3,), bytes([0, 1, 7]))    # any byte but 0 is true
    tensors["F32"] = ("F32", (2,), np.array([0.5, -2.0], "<f4").tobytes())
    write_safetensors(path, tensors)
    with tensormap.open(path) as f:
        for d, want in ARRAYS.items():
            got = f.get_tensor(d)
            assert got.dtype == want.dtype and got.shape == want.shape, d
            assert got.tolist() == want.tolist(), d
            assert np.array_equal(f.get_rows(d, 0, got.size // want.shape[-1]),
                                  want.reshape(-1, want.shape[-1])), d
        assert f.get_tensor("I64")[0, 0] == 9007199254740993
        assert np.isfinite(f.get_tensor("F64")).all()
        b = f.get_tensor("BOOL")
        assert b.dtype == np.bool_ and b.tolist() == [False, True, True]
        assert f.get_tensor("F32").dtype == np.float32        # the rest still decode to float32
        rows = f.get_rows("I64", 1, 2)
        assert rows.dtype == np.int64 and rows.tolist() == [[2 ** 63 - 1, -2 ** 63]]
        # out= takes the tensor's own dtype, and refuses float32 for it
        out = np.zeros((2, 2), np.int64)
        assert f.get_tensor("I64", out=out) is out and out.tolist() == ARRAYS["I64"].tolist()
        with pytest.raises(tensormap.InvalidError, match="int64"):
            f.get_tensor("I64", out=np.zeros(4, np.float32))


def write_gguf(path, tensors):
    """A GGUF v3 file with no metadata: tensors name -> (ggml type id, ne, raw bytes), each at a
    multiple of 32 in the data section."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 0)
    infos, data = b"", b""
    for name, (type_id, ne, raw) in tensors.items():
        data += b"\0" * (-len(data) % 32)
        infos += struct.pack("<Q", len(name)) + name.encode() + struct.pack("<I", len(ne))
        infos += struct.pack(f"<{len(ne)}Q", *ne) + struct.pack("<IQ", type_id, len(data))
        data += raw
    header = head + infos
    path.write_bytes(header + b"\0" * (-len(header) % 32) + data)


def test_gguf_i64_f64_i32_come_back_exactly(tmp_path):
    path = tmp_path / "exact.gguf"
    ids = {"I64": 27, "F64": 28, "I32": 26}    # ggml's type ids (i64, f64, i32)
    write_gguf(path, {d: (ids[d], ARRAYS[d].shape[::-1], ARRAYS[d].tobytes()) for d in ids})
    with tensormap.open(path) as f:
        for d in ids:
            got = f.get_tensor(d)
            assert got.dtype == ARRAYS[d].dtype and got.tolist() == ARRAYS[d].tolist(), d
