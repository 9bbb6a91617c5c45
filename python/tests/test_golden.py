"""The golden corpus (files written and decoded by ggml) through the Python package."""

import math

import numpy as np
import pytest

import tensormap
from conftest import corpus_path, golden_tensors, golden_view, require_view_matches_file


def pytorch_shape(row):
    return tuple(reversed(row["ne"][:row["n_dims"]]))


def test_keys_in_file_order(golden):
    with tensormap.open(corpus_path("golden", golden + ".gguf")) as f:
        assert f.keys() == [t[0] for t in golden_view(golden)["tensor"]]


def test_every_tensor_decodes_bit_exact_or_names_its_type(golden):
    """Every tensor the library says it can decode matches ggml's floats bit for bit; every
    other one fails with the library's UNSUPPORTED error naming its type."""
    with open(corpus_path("golden", golden + ".f32"), "rb") as fp:
        oracle = fp.read()
    decoded = refused = 0
    with tensormap.open(corpus_path("golden", golden + ".gguf")) as f:
        for row in golden_tensors(golden):
            if not tensormap.can_decode(row["type"]):
                with pytest.raises(tensormap.InvalidError) as e:
                    f.get_tensor(row["name"])
                assert e.value.code == "UNSUPPORTED"
                assert row["type"] in e.value.message
                refused += 1
                continue
            got = f.get_tensor(row["name"])
            want = np.frombuffer(oracle, "<f4", row["n_values"], row["f32_offset"])
            assert got.dtype == np.float32 and got.flags.c_contiguous
            assert got.shape == pytorch_shape(row), row["name"]
            mismatch = np.flatnonzero(got.reshape(-1).view(np.uint32) != want.view(np.uint32))
            assert mismatch.size == 0, (
                f"{row['name']}: {mismatch.size} values differ from ggml's, first at "
                f"{mismatch[:1]}: {got.reshape(-1)[mismatch[:1]]} != {want[mismatch[:1]]}")
            decoded += 1
    assert decoded + refused == len(golden_tensors(golden))
    assert decoded >= 2 * 13   # f32, f16, bf16 and the legacy and k-quants, rows + raw blocks


def test_get_tensor_into_a_caller_s_array():
    with tensormap.open(corpus_path("golden", "golden-a.gguf")) as f:
        want = f.get_tensor("q4_K.rows.weight")
        out = np.full(want.size, np.nan, np.float32)
        assert f.get_tensor("q4_K.rows.weight", out=out) is out
        assert np.array_equal(out.view(np.uint32), want.reshape(-1).view(np.uint32))
        for bad in (np.empty(want.size - 1, np.float32), np.empty(want.size, np.float64),
                    np.empty((want.size, 2), np.float32)[:, 0], [0.0] * want.size):
            with pytest.raises(tensormap.InvalidError) as e:
                f.get_tensor("q4_K.rows.weight", out=bad)
            assert e.value.code == "INVALID_ARG"
        readonly = np.empty(want.size, np.float32)
        readonly.flags.writeable = False
        with pytest.raises(tensormap.InvalidError):
            f.get_tensor("q4_K.rows.weight", out=readonly)


def test_get_rows_equal_the_whole_tensor_s_rows(golden):
    with tensormap.open(corpus_path("golden", golden + ".gguf")) as f:
        for row in golden_tensors(golden):
            if not tensormap.can_decode(row["type"]) or row["n_dims"] < 2:
                continue
            whole = f.get_tensor(row["name"]).reshape(-1, row["ne"][0])
            part = f.get_rows(row["name"], 1, 3)
            assert part.shape == (2, row["ne"][0])
            assert np.array_equal(part.view(np.uint32), whole[1:3].view(np.uint32)), row["name"]
            assert f.get_rows(row["name"], 2, 2).shape == (0, row["ne"][0])


def test_info_matches_ggml_s_view(golden):
    require_view_matches_file(golden)
    view = golden_view(golden)
    with tensormap.open(corpus_path("golden", golden + ".gguf")) as f:
        for name, type_name, ne0, ne1, ne2, ne3, offset, size in view["tensor"]:
            info = f.info(name)
            ne = [int(ne0), int(ne1), int(ne2), int(ne3)]
            n_dims = next(r["n_dims"] for r in golden_tensors(golden) if r["name"] == name)
            assert info == {"type": type_name, "shape": tuple(reversed(ne[:n_dims])),
                            "offset": int(offset), "file_offset": view["data_offset"] + int(offset),
                            "nbytes": int(size), "shard": 0}
        assert f.shards() == [corpus_path("golden", golden + ".gguf")]


def test_get_raw_is_the_file_s_bytes_read_only(golden):
    require_view_matches_file(golden)
    path = corpus_path("golden", golden + ".gguf")
    with open(path, "rb") as fp:
        file_bytes = fp.read()
    view = golden_view(golden)
    with tensormap.open(path) as f:
        for name, *_, offset, size in view["tensor"]:
            raw = f.get_raw(name)
            start = view["data_offset"] + int(offset)
            assert raw.dtype == np.uint8 and raw.shape == (int(size),)
            assert raw.tobytes() == file_bytes[start:start + int(size)], name
            assert not raw.flags.writeable
            with pytest.raises(ValueError):
                raw[0] = 1
            with pytest.raises(ValueError):
                raw.flags.writeable = True
        # no copy: the array's memory is the mapping, which /proc/self/maps lists as the file
        raw = f.get_raw(view["tensor"][0][0])
        address = raw.__array_interface__["data"][0]
        assert any(lo <= address < hi for lo, hi in mappings_of(path))


def mappings_of(path):
    """Address ranges of this process's mappings of path."""
    import os
    real = os.path.realpath(path)
    with open("/proc/self/maps") as fp:
        for line in fp:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].strip() == real:
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                yield lo, hi


def kv_expected(fields):
    """A .view.tsv kv line's value as Python would hold it: (type, value or None when the view
    gives only a length)."""
    vtype = fields[1]
    if vtype == "arr":
        elem, count, values = fields[2], int(fields[3]), fields[4:]
        if elem == "str" or (count and not values):
            return count, None
        return count, [scalar(elem, v) for v in values]
    if vtype == "str":
        return int(fields[2]), None
    return None, scalar(vtype, fields[2])


def scalar(vtype, text):
    if vtype == "bool":
        return {"true": True, "false": False}[text]
    if vtype.startswith("f"):
        return float(text)
    return int(text)


def test_metadata_matches_ggml_s_view(golden):
    require_view_matches_file(golden)
    view = golden_view(golden)
    with tensormap.open(corpus_path("golden", golden + ".gguf")) as f:
        meta = f.metadata()
    assert list(meta) == [kv[0] for kv in view["kv"]]
    for kv in view["kv"]:
        key, vtype = kv[0], kv[1]
        got = meta[key]
        length, want = kv_expected(kv)
        if vtype == "str":
            assert isinstance(got, str) and len(got.encode()) == length, key
        elif vtype == "arr":
            assert isinstance(got, list) and len(got) == length, key
            if want is not None:
                assert [type(x) for x in got] == [type(x) for x in want], key
                # ggml prints floats with 9 (f32) or 17 (f64) digits: equal after that rounding
                assert all(g == w or (isinstance(w, float) and math.isclose(g, w, rel_tol=1e-8))
                           for g, w in zip(got, want)), key
        elif vtype == "f32":
            assert isinstance(got, float) and math.isclose(got, want, rel_tol=1e-8), key
        else:
            assert type(got) is type(want) and got == want, key
    assert meta["golden.string"] == "héllo, wörld ✓"   # UTF-8 decoded
    assert meta["golden.tokens"] == ["<unk>", "", "▁the", "a b"]
    assert meta["golden.arr_f32"][:2] == [0.5, -1.5]   # f32 widened exactly
