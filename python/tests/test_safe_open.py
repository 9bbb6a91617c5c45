"""tensormap.safe_open as safetensors documents safe_open: keys() sorted, offset_keys() in data
order, metadata() a dict or None, get_tensor in the stored dtype, get_slice with get_shape(),
get_dtype() and numpy's basic indexing. Expected values come from numpy: the arrays written
into the file (safetensors), and numpy's own indexing of the whole decoded tensor (quantized
GGUF, whose whole-tensor decode test_golden checks against ggml bit for bit)."""

import numpy as np
import pytest

import tensormap
from conftest import corpus_path
from model_files import in_a_mapping_of
from test_exact import ARRAYS
from test_formats import write_safetensors

RNG = np.random.default_rng(24)
F32 = RNG.standard_normal((7, 12)).astype("<f4")
F16 = RNG.standard_normal((5, 3, 4)).astype("<f2")
BF16_BITS = (RNG.standard_normal((6, 8)).astype("<f4").view("<u4") >> 16).astype("<u2")
F64 = RNG.standard_normal(9)
STORED = {"F32": F32, "F16": F16, "F64": F64, **ARRAYS}
# numpy's basic indexing, every form the issue names and a few more
KEYS = [np.s_[...], np.s_[2:5], np.s_[:, 1:3], np.s_[1], np.s_[-1], np.s_[::2], np.s_[::-1],
        np.s_[-3:-1], np.s_[1:-1:2], np.s_[5:2], np.s_[..., 1], np.s_[:, -1], np.s_[1, ::-2],
        np.s_[100:], np.s_[:, ::-3], np.s_[::-2, 1:]]


@pytest.fixture
def st_file(tmp_path):
    path = tmp_path / "model.safetensors"
    tensors = {n: (n, a.shape, a.tobytes()) for n, a in STORED.items()}
    tensors["BF16"] = ("BF16", BF16_BITS.shape, BF16_BITS.tobytes())
    tensors["BOOL"] = ("BOOL", (4,), bytes([0, 1, 9, 0]))
    write_safetensors(path, tensors, {"format": "pt", "note": "x"})
    return path, list(tensors)


def bf16_as_f32(bits):
    return (bits.astype("<u4") << 16).view("<f4")


def applicable(key, shape):
    try:
        np.empty(shape)[key]
        return True
    except IndexError:
        return False


def test_keys_metadata_and_the_stored_dtypes(st_file):
    path, order = st_file
    with tensormap.safe_open(path, framework="np") as f:
        assert f.keys() == sorted(order)
        assert f.offset_keys() == order
        assert f.metadata() == {"format": "pt", "note": "x"}
        for name, want in STORED.items():
            got = f.get_tensor(name)
            assert got.dtype == want.dtype and got.shape == want.shape, name
            assert got.tobytes() == want.tobytes(), name
            assert f.get_slice(name).get_dtype() == name
            assert f.get_slice(name).get_shape() == list(want.shape)
        # numpy has no bfloat16: float32 (exact) unless the bits are asked for
        assert np.array_equal(f.get_tensor("BF16"), bf16_as_f32(BF16_BITS))
        bits = f.get_tensor("BF16", dtype="bf16")
        assert bits.dtype == np.uint16 and np.array_equal(bits, BF16_BITS)
        assert f.get_tensor("BOOL").tolist() == [False, True, True, False]
        assert set(f) == set(order) and len(f) == len(order) and "F16" in f


def test_zero_copy_views_are_read_only(st_file):
    path, _ = st_file
    with tensormap.safe_open(path, framework="np") as f:
        a = f.get_tensor("F32")
        b = f.get_tensor("F32")
        assert in_a_mapping_of(path, a.ctypes.data)    # a view of the file, not a copy
        assert not a.flags.writeable
        with pytest.raises(ValueError):
            a[0, 0] = 1
        with pytest.raises(ValueError):
            a.flags.writeable = True
        part = f.get_slice("F32")[2:4]
        assert in_a_mapping_of(path, part.ctypes.data) and not part.flags.writeable
        assert np.array_equal(b, F32)
    assert np.array_equal(a, F32)               # past close(), still the file's bytes


@pytest.mark.parametrize("key", KEYS, ids=str)
def test_slices_index_as_numpy_does(st_file, key):
    path, _ = st_file
    with tensormap.safe_open(path, framework="np") as f:
        for name, want in {**STORED, "BF16": bf16_as_f32(BF16_BITS)}.items():
            if not applicable(key, want.shape):
                with pytest.raises(IndexError):
                    f.get_slice(name)[key]
                continue
            got = f.get_slice(name)[key]
            assert got.shape == want[key].shape and got.dtype == want.dtype, (name, key)
            assert np.array_equal(got, want[key]), (name, key)


def test_slices_of_a_file_read_into_memory(st_file):
    """mmap=False: the views are of the library's copy, and still read-only."""
    path, _ = st_file
    with tensormap.safe_open(path, framework="np", mmap=False) as f:
        got = f.get_slice("F16")[1:3, ::-1]
        assert np.array_equal(got, F16[1:3, ::-1])
        assert not f.get_tensor("F16").flags.writeable


GOLDEN = corpus_path("golden", "golden-a.gguf")


@pytest.mark.parametrize("name", ["q4_K.rows.weight", "q8_0.rows.weight", "iq2_xs.rows.weight",
                                  "q6_K.raw_blocks", "blk.0.four_d.weight", "f16.rows.weight"])
def test_quantized_slices_are_numpy_s_slices_of_the_decoded_tensor(name):
    with tensormap.open(GOLDEN) as whole, tensormap.safe_open(GOLDEN, framework="np") as f:
        full = whole.get_tensor(name).astype(np.float32)
        s = f.get_slice(name)
        assert s.get_shape() == list(full.shape)
        kind = whole.info(name)["type"]
        assert s.get_dtype() == {"f32": "F32", "f16": "F16"}.get(kind, kind)
        keys = KEYS + [np.s_[:, 300:301], np.s_[..., 255:513], np.s_[0, 0, 0, 1:3],
                       np.s_[1000:1100], np.s_[-257:]]
        for key in keys:
            if not applicable(key, full.shape):
                continue
            got = f.get_slice(name, dtype="f32")[key]
            want = full[key]
            assert got.shape == want.shape and got.dtype == np.float32, key
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (name, key)


def bf16_round(x):
    """float32 -> bfloat16 bits, to nearest even (no NaN in these tensors)."""
    u = x.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def test_quantized_types_decode_to_f16_or_bf16_on_request():
    name = "q4_K.rows.weight"
    with tensormap.open(GOLDEN) as whole, tensormap.safe_open(GOLDEN, framework="np") as f:
        full = whole.get_tensor(name)
        assert f.get_tensor(name).dtype == np.float32           # the default
        half = f.get_tensor(name, dtype=np.float16)
        assert half.dtype == np.float16
        assert np.array_equal(half.view(np.uint16), full.astype(np.float16).view(np.uint16))
        bf = f.get_slice(name, dtype="bfloat16")[1:3, 256:512]
        assert np.array_equal(bf, bf16_round(full[1:3, 256:512].copy()))
        with pytest.raises(ValueError, match="float32, float16 or bfloat16"):
            f.get_tensor(name, dtype="int8")


def test_integer_tensors_refuse_a_float_dtype(tmp_path):
    path = tmp_path / "i.safetensors"
    write_safetensors(path, {"ids": ("I64", (2,), ARRAYS["I64"][0].tobytes())})
    with tensormap.safe_open(path, framework="np") as f:
        with pytest.raises(tensormap.InvalidError, match="keep their type"):
            f.get_tensor("ids", dtype="f16")


def test_gguf_metadata_is_typed_and_a_file_without_any_gives_none(tmp_path):
    with tensormap.safe_open(GOLDEN, framework="np") as f:
        meta = f.metadata()
        assert isinstance(meta["general.architecture"], str)
        assert any(not isinstance(v, str) for v in meta.values())   # typed, not strings
    path = tmp_path / "bare.safetensors"
    write_safetensors(path, {"a": ("F32", (1,), b"\0\0\0\0")})
    with tensormap.safe_open(path, framework="np") as f:
        assert f.metadata() is None


def test_framework_and_device_are_checked(st_file):
    path, _ = st_file
    with pytest.raises(ValueError, match="framework='tf'"):
        tensormap.safe_open(path, framework="tf")
    with pytest.raises(ValueError, match="device='cuda:0'"):
        tensormap.safe_open(path, framework="np", device="cuda:0")


def test_an_unknown_name_is_a_key_error_naming_the_close_ones(st_file):
    path, _ = st_file
    with tensormap.safe_open(path, framework="np") as f:
        for call in (f.get_tensor, f.get_slice):
            with pytest.raises(KeyError) as e:
                call("F61")
            assert isinstance(e.value, tensormap.Error) and e.value.code == "NOT_FOUND"
            assert "did you mean 'F16' or 'F64'" in e.value.message \
                or "did you mean 'F64' or 'F16'" in e.value.message
        with pytest.raises(KeyError) as e:
            f.get_tensor("zzzzzzzz")
        assert "keys() lists them" in e.value.message


def test_a_path_replaced_after_open_is_not_viewed(tmp_path):
    """Views map the path again: once another file (of the same size) has replaced it, they
    must not show that file's bytes, but the ones the library opened (then as a copy)."""
    path = tmp_path / "w.safetensors"
    write_safetensors(path, {"F32": ("F32", F32.shape, F32.tobytes())})
    with tensormap.safe_open(path, framework="np") as f:
        other = tmp_path / "other.safetensors"
        write_safetensors(other, {"F32": ("F32", F32.shape, (F32 + 1).tobytes())})
        other.replace(path)
        assert np.array_equal(f.get_tensor("F32"), F32)
        assert f._file.get_raw("F32").tobytes() == F32.tobytes()
