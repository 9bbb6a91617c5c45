"""tensormap.GGUFReader against what gguf-py's reader gives, checked without gguf-py (it is not a
Debian package): the file's own bytes (gguf-py's parts are views of exactly those bytes, so
joined they must reproduce each entry and each tensor-info record), ggml's view of the golden
files (.view.tsv: entries, types, tensors, offsets) and ggml's decoding (.f32), and gguf-py's
names and ids as the GGUF specification numbers them."""

import numpy as np
import pytest

import tensormap
import tensormap as gguf   # the habit this reader serves
from conftest import corpus_path, golden_tensors, golden_view, require_view_matches_file
from test_formats import write_safetensors

# gguf-py's GGUFValueType, as the GGUF specification numbers it.
SPEC_VALUE_TYPES = {"UINT8": 0, "INT8": 1, "UINT16": 2, "INT16": 3, "UINT32": 4, "INT32": 5,
                    "FLOAT32": 6, "BOOL": 7, "STRING": 8, "ARRAY": 9, "UINT64": 10, "INT64": 11,
                    "FLOAT64": 12}
# ggml's value-type names (as .view.tsv spells them) -> gguf-py's.
VIEW_VALUE_TYPES = {"u8": "UINT8", "i8": "INT8", "u16": "UINT16", "i16": "INT16", "u32": "UINT32",
                    "i32": "INT32", "f32": "FLOAT32", "bool": "BOOL", "str": "STRING",
                    "arr": "ARRAY", "u64": "UINT64", "i64": "INT64", "f64": "FLOAT64"}
# Some of gguf-py's GGMLQuantizationType members, with ggml's ids.
SPEC_TENSOR_TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q8_0": 8, "Q2_K": 10, "Q4_K": 12, "Q6_K": 14,
                     "IQ2_XXS": 16, "IQ4_XS": 23, "I8": 24, "I64": 27, "F64": 28, "BF16": 30,
                     "TQ1_0": 34, "TQ2_0": 35, "MXFP4": 39}
# gguf-py gives these tensor types' data typed; every other type's as uint8 bytes.
TYPED = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I8": np.int8,
         "I16": np.int16, "I32": np.int32, "I64": np.int64}


def file_bytes(golden):
    with open(corpus_path("golden", golden + ".gguf"), "rb") as fp:
        return fp.read()


def reader(golden):
    return gguf.GGUFReader(corpus_path("golden", golden + ".gguf"))


def joined(parts):
    return b"".join(p.tobytes() for p in parts)


def test_enums_are_gguf_py_s():
    assert {m.name: m.value for m in gguf.GGUFValueType} == SPEC_VALUE_TYPES
    for name, value in SPEC_TENSOR_TYPES.items():
        assert gguf.GGMLQuantizationType[name] == value


def test_fields(golden):
    require_view_matches_file(golden)
    view, raw, r = golden_view(golden), file_bytes(golden), reader(golden)
    # gguf-py's three header pseudo-fields come first, then the entries in file order
    assert list(r.fields)[:3] == ["GGUF.version", "GGUF.tensor_count", "GGUF.kv_count"]
    assert [r.fields[k].contents() for k in list(r.fields)[:3]] == \
        [view["version"], view["n_tensors"], view["n_kv"]]
    assert list(r.fields)[3:] == [kv[0] for kv in view["kv"]]
    for kv in view["kv"]:
        f = r.get_field(kv[0])
        assert f.name == kv[0]
        expect = [gguf.GGUFValueType[VIEW_VALUE_TYPES[kv[1]]]]
        if kv[1] == "arr" and int(kv[3]):   # gguf-py knows an array's element type from one
            expect.append(gguf.GGUFValueType[VIEW_VALUE_TYPES[kv[2]]])
        assert f.types == expect, kv
    end = {}   # each entry ends where the next begins; the last where the tensor infos begin
    names = list(r.fields)
    for a, b in zip(names, names[1:]):
        end[a] = r.fields[b].offset
    end[names[-1]] = r.tensors[0].field.offset
    for name, f in r.fields.items():
        # the parts, joined, are the entry's bytes: every length, type and value as the file has it
        assert joined(f.parts) == raw[f.offset:end[name]], name


def test_field_values(golden):
    r = reader(golden)
    if golden == "golden-a":
        assert r.get_field("golden.u64").contents() == 18000000000000000000
        assert r.get_field("golden.string").contents() == "héllo, wörld ✓"
        assert r.get_field("golden.arr_i32").contents() == [-1, 0, 1, 2147483647, -2147483648]
        assert r.get_field("golden.arr_i32").contents(3) == 2147483647
        assert r.get_field("golden.arr_i32").contents(slice(1, 3)) == [0, 1]
        assert r.get_field("golden.tokens").contents() == ["<unk>", "", "▁the", "a b"]
        assert r.get_field("golden.arr_empty").contents() == []
    assert r.get_field("no.such.key") is None
    # gguf-py's older idiom: a value through parts and data
    for f in list(r.fields.values()):
        if f.types[0] == gguf.GGUFValueType.STRING:
            assert str(bytes(f.parts[f.data[0]]), encoding="utf-8") == f.contents()
        elif f.types == [gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.STRING]:
            assert [str(bytes(f.parts[i]), encoding="utf-8") for i in f.data] == f.contents()
        elif f.types[0] == gguf.GGUFValueType.ARRAY:
            assert [f.parts[i][0].item() for i in f.data] == f.contents()
        else:
            assert f.parts[f.data[0]][0].item() == f.contents()


def test_tensors(golden):
    require_view_matches_file(golden)
    view, raw, r = golden_view(golden), file_bytes(golden), reader(golden)
    assert r.alignment == view["alignment"] and r.data_offset == view["data_offset"]
    assert [t.name for t in r.tensors] == [v[0] for v in view["tensor"]]
    for i, (name, type_name, *rest) in enumerate(view["tensor"]):
        ne, offset, n_bytes = [int(x) for x in rest[:4]], int(rest[4]), int(rest[5])
        t = r.get_tensor(i)
        assert t is r.tensors[i]
        assert t.tensor_type == gguf.GGMLQuantizationType[type_name.upper()]
        dims = t.shape.tolist()
        assert t.shape.dtype == np.uint64 and dims == ne[:len(dims)] and \
            all(d == 1 for d in ne[len(dims):]), (name, dims, ne)
        assert t.n_elements == int(np.prod(ne)) and t.n_bytes == n_bytes
        assert t.data_offset == view["data_offset"] + offset
        assert t.data.tobytes() == raw[t.data_offset:t.data_offset + n_bytes], name
        typed = TYPED.get(t.tensor_type.name)
        np_shape = tuple(reversed(dims))
        if typed:
            assert t.data.dtype == typed and t.data.shape == np_shape
        else:   # gguf-py: bytes, one row of blocks per last dimension
            assert t.data.dtype == np.uint8
            assert t.data.shape == np_shape[:-1] + (n_bytes * ne[0] // t.n_elements,)
        # the info record: name length, name, n_dims, dims, type, offset, as the file has them
        f = t.field
        assert f.name == name and f.data == [1, 3, 4, 5]
        assert bytes(f.parts[1]).decode() == name
        rec = joined(f.parts)
        assert rec == raw[f.offset:f.offset + len(rec)]


def test_f32_data_is_ggml_s(golden):
    """An F32 tensor's data is its values (ggml's .f32 holds them as ggml read them)."""
    with open(corpus_path("golden", golden + ".f32"), "rb") as fp:
        ref = fp.read()
    r = reader(golden)
    by_name = {t.name: t for t in r.tensors}
    checked = 0
    for g in golden_tensors(golden):
        if g["type"] == "f32":
            want = np.frombuffer(ref, np.float32, g["n_values"], g["f32_offset"])
            assert by_name[g["name"]].data.reshape(-1).tobytes() == want.tobytes()
            checked += 1
    assert checked, "no f32 tensor in the golden file"


def test_data_is_read_only():
    t = reader("golden-a").tensors[0]
    with pytest.raises(ValueError):
        t.data[0] = 1


def test_refusals(tmp_path):
    path = corpus_path("golden", "golden-a.gguf")
    with pytest.raises(tensormap.InvalidError, match="read-only"):
        gguf.GGUFReader(path, "r+")
    st = tmp_path / "model.safetensors"
    write_safetensors(st, {"w": ("F32", (1,), b"\0" * 4)})
    with pytest.raises(tensormap.InvalidError, match="GGUFReader reads one GGUF file"):
        gguf.GGUFReader(st)
    with pytest.raises(tensormap.FileError):
        gguf.GGUFReader(tmp_path / "missing.gguf")


def test_damaged_file_is_refused_at_the_damage():
    """Where gguf-py would read on past a damaged length, the reader refuses the file as
    tensormap.open does: a ValueError naming the byte offset, at or after the damage."""
    path = corpus_path("damaged", "vocab-phi-3.gguf")
    with open(path, "rb") as fp:
        damage_at = fp.read().find(b"\xef\xbf\xbd")
    with pytest.raises(ValueError) as e:
        gguf.GGUFReader(path)
    assert isinstance(e.value, tensormap.InvalidError)
    assert e.value.offset is not None and e.value.offset >= damage_at > 0
    assert f"byte {e.value.offset}" in e.value.message
