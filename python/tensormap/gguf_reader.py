"""tensormap.GGUFReader: gguf-py's reader (`gguf.GGUFReader`) for the attributes scripts use, so
that `import tensormap as gguf` runs them over tensormap's index and mapping.

    reader = tensormap.GGUFReader("model.gguf")
    for t in reader.tensors:          # name, tensor_type, shape, n_elements, n_bytes, data, ...
        print(t.name, t.tensor_type.name, t.shape.tolist())
    reader.get_field("general.architecture").contents()    # "llama"

Names, types and shapes are gguf-py's: `shape` is GGUF's order (ne[0] first), `data` is numpy's
order (slowest first) and holds f32/f16/f64/i8..i64 tensors typed, every other type as its raw
bytes in uint8, one row of blocks per last dimension. What differs is written down in
docs/python.md ("gguf-py's GGUFReader"): read-only, plain classes, lazy `parts`."""

import enum
from collections import OrderedDict

import numpy as np

from . import _VTYPE_NAMES, _c, _error, _text, InvalidError, open as _open

__all__ = ["GGUFReader", "ReaderField", "ReaderTensor", "GGMLQuantizationType", "GGUFValueType"]

# gguf-py's enums with the library's ids: a type's name is the library's (tm_type_name) in
# capitals, as gguf-py spells it ("q4_K" -> Q4_K, "iq2_xxs" -> IQ2_XXS); GGUF ids are below 64.
GGMLQuantizationType = enum.IntEnum("GGMLQuantizationType", {
    _c.tm_type_name(i).decode().upper(): i for i in range(64) if _c.tm_type_name(i)})

# The library's value-type names (tm_vtype_name): gguf-py's name, and the numpy dtype its parts
# hold (None: a string or an array, which are several parts).
_VALUE_TYPES = {"u8": ("UINT8", np.uint8), "i8": ("INT8", np.int8),
                "u16": ("UINT16", np.uint16), "i16": ("INT16", np.int16),
                "u32": ("UINT32", np.uint32), "i32": ("INT32", np.int32),
                "u64": ("UINT64", np.uint64), "i64": ("INT64", np.int64),
                "f32": ("FLOAT32", np.float32), "f64": ("FLOAT64", np.float64),
                "bool": ("BOOL", np.bool_), "str": ("STRING", None), "arr": ("ARRAY", None)}
GGUFValueType = enum.IntEnum("GGUFValueType", {
    _VALUE_TYPES[name][0]: i for i, name in _VTYPE_NAMES.items() if name in _VALUE_TYPES})
_DTYPE = {GGUFValueType[gguf_name]: dtype for gguf_name, dtype in _VALUE_TYPES.values()}

# Tensor types gguf-py gives as typed arrays; every other type's data is its bytes (uint8).
_TYPED_DATA = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I8": np.int8,
               "I16": np.int16, "I32": np.int32, "I64": np.int64}


def _u32(v):
    return np.array([v], np.uint32)


def _u64(v):
    return np.array([v], np.uint64)


def _string_parts(s):
    """A GGUF string as gguf-py splits it: its length (u64), its bytes (uint8)."""
    b = s.encode("utf-8", "surrogateescape")
    return [_u64(len(b)), np.frombuffer(b, np.uint8)]


def _value_parts(vtype, value):
    """(parts, indexes of the value's parts) of a value, after whatever precedes it."""
    if vtype == GGUFValueType.STRING:
        return _string_parts(value), [1]
    return [np.array([value], _DTYPE[vtype])], [0]


class ReaderField:
    """A metadata entry (or a tensor's info record) as gguf-py's ReaderField: offset (where it
    starts in the file), name, types ([ARRAY, element type] for an array) and contents(); parts
    and data (gguf-py's split of the entry into numpy arrays, data indexing the value's parts)
    are built from the typed value the first time they are asked for."""

    def __init__(self, offset, name, types, value=None, parts=None, data=None, elem=None):
        self.offset, self.name, self.types, self._value = offset, name, types, value
        self._elem = elem   # an array's element type (types holds it only when not empty)
        self._parts, self._data = parts, data

    def contents(self, index_or_slice=slice(None)):
        """The value: a scalar as int/float/bool, a string as str, an array as a list (or one
        element, for an int index)."""
        if self.types and self.types[0] == GGUFValueType.ARRAY:
            return self._value[index_or_slice]
        return self._value

    def _split(self):
        if self._parts is None:
            parts = [*_string_parts(self.name), _u32(self.types[0])]
            if self.types[0] == GGUFValueType.ARRAY:
                parts += [_u32(self._elem), _u64(len(self._value))]
                data = []
                for v in self._value:
                    more, idx = _value_parts(self._elem, v)
                    data += [len(parts) + i for i in idx]
                    parts += more
            else:
                more, idx = _value_parts(self.types[0], self._value)
                data = [len(parts) + i for i in idx]
                parts += more
            self._parts, self._data = parts, data
        return self._parts, self._data

    @property
    def parts(self):
        return self._split()[0]

    @property
    def data(self):
        return self._split()[1]

    def __repr__(self):
        return f"ReaderField({self.name!r}, offset={self.offset}, types={self.types})"


class ReaderTensor:
    """A tensor as gguf-py's ReaderTensor: name, tensor_type (GGMLQuantizationType), shape (GGUF
    order, uint64), n_elements, n_bytes, data_offset (from the file's start), data (a read-only
    view of the mapping, made when first asked for: for a URL, that is when it is fetched) and
    field (its info record)."""

    def __init__(self, file, name, tensor_type, shape, n_elements, n_bytes, data_offset, field):
        self._file = file
        self.name, self.tensor_type, self.shape = name, tensor_type, shape
        self.n_elements, self.n_bytes, self.data_offset, self.field = \
            n_elements, n_bytes, data_offset, field
        self._data = None

    @property
    def data(self):
        if self._data is None:
            raw = self._file.get_raw(self.name)
            np_shape = tuple(int(d) for d in self.shape[::-1])
            typed = _TYPED_DATA.get(self.tensor_type.name)
            if typed is not None:
                self._data = raw.view(typed).reshape(np_shape)
            else:   # a row of blocks per last dimension, as gguf-py's quant_shape_to_byte_shape
                rows = self.n_elements // int(self.shape[0]) if self.n_elements else 0
                self._data = raw.reshape(np_shape[:-1] + (self.n_bytes // rows if rows else 0,))
        return self._data

    def __repr__(self):
        return f"ReaderTensor({self.name!r}, {self.tensor_type.name}, shape={self.shape.tolist()})"


class GGUFReader:
    """A GGUF file (a path or anything tensormap.open takes that is one GGUF file) read as
    gguf-py reads it: fields (an OrderedDict of ReaderField, gguf-py's GGUF.version,
    GGUF.tensor_count and GGUF.kv_count first), tensors (a list of ReaderTensor in file order),
    get_field(key), get_tensor(index), alignment, data_offset. Read-only: mode must be "r"."""

    byte_order = "I"   # the host's: tensormap reads little-endian GGUF only

    def __init__(self, path, mode="r"):
        if mode != "r":
            raise _error(InvalidError, "INVALID_ARG", f"GGUFReader is read-only: mode must be "
                         f"'r', not {mode!r}", path=str(path))
        self._file = f = _open(path)
        h = f._live()
        layout = _c.tm_file_layout(h.ptr).contents
        if layout.version == 0 or layout.n_shards != 1:
            raise _error(InvalidError, "UNSUPPORTED", "GGUFReader reads one GGUF file; this is "
                         "safetensors or a split set: use tensormap.open", path=str(path))
        self.alignment = layout.alignment
        self.data_offset = layout.data_start
        self.fields = OrderedDict()
        for offset, name, vtype, value in ((4, "GGUF.version", GGUFValueType.UINT32,
                                            layout.version),
                                           (8, "GGUF.tensor_count", GGUFValueType.UINT64,
                                            layout.n_tensors),
                                           (16, "GGUF.kv_count", GGUFValueType.UINT64,
                                            layout.n_kv)):
            self.fields[name] = ReaderField(offset, name, [vtype], value,
                                            [np.array([value], _DTYPE[vtype])], [0])
        values = f.metadata()
        for i in range(_c.tm_n_kv(h.ptr)):
            kv = _c.tm_kv_at(h.ptr, i).contents
            key = _text(kv.key)
            types, elem = [GGUFValueType(kv.type)], None
            if types[0] == GGUFValueType.ARRAY:
                elem = GGUFValueType(kv.elem_type)
                types += [elem] if kv.count else []   # gguf-py: an empty array's is unknown
            self.fields[key] = ReaderField(kv.offset, key, types, values[key], elem=elem)
        self.tensors = []
        for i in range(_c.tm_n_tensors(h.ptr)):
            t = _c.tm_tensor_at(h.ptr, i).contents
            name = _text(t.name)
            tensor_type = GGMLQuantizationType(t.type)
            shape = np.array(t.ne[:t.n_dims], np.uint64)
            # gguf-py's split of the info record: name length, name, n_dims, dims, type, offset
            field = ReaderField(t.info_offset, name, [], None,
                                [*_string_parts(name), _u32(t.n_dims), shape.copy(),
                                 _u32(t.type), _u64(t.offset)], [1, 3, 4, 5])
            self.tensors.append(ReaderTensor(f, name, tensor_type, shape, t.n_elements,
                                             t.n_bytes, layout.data_start + t.offset, field))

    def get_field(self, key):
        """The field named key, or None (gguf-py's contract: no exception)."""
        return self.fields.get(key)

    def get_tensor(self, idx):
        """The tensor at index idx of tensors (file order)."""
        return self.tensors[idx]
