"""safe_open: Hugging Face safetensors' reading interface on every file tensormap opens.

    with tensormap.safe_open("model.safetensors", framework="pt") as f:
        for name in f.keys():
            w = f.get_tensor(name)               # the stored dtype, zero-copy where aligned
        part = f.get_slice(name)[a:b]            # reads and decodes only rows a..b

Stored types come back as stored (F32, F16, BF16, F64, the integers, BOOL); quantized ones are
decoded to float32, or float16/bfloat16 with dtype=. See docs/python.md."""

import ctypes
import math

import numpy as np

from . import File, InvalidError, _c, _error, _from_c, _index, _lib, _memory, _shape, _text
from ._dtypes import DECODED, STORED, requested

FRAMEWORKS = {"np": "np", "numpy": "np", "pt": "pt", "torch": "pt", "pytorch": "pt"}

# Functions this module calls that the package's base declarations do not.
for _name, _sig in {
        "tm_dequant_elements": (ctypes.c_int, [ctypes.POINTER(_lib.Tensor), ctypes.c_uint64,
                                               ctypes.c_uint64, ctypes.c_void_p,
                                               ctypes.POINTER(_lib.Error)]),
        "tm_dequant_rows_mt": (ctypes.c_int, [ctypes.POINTER(_lib.Tensor), ctypes.c_uint64,
                                              ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint,
                                              ctypes.POINTER(_lib.Error)]),
        "tm_type_block_elems": (ctypes.c_uint32, [ctypes.c_int]),
        "tm_f32_to_f16": (None, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]),
        "tm_f32_to_bf16": (None, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t])}.items():
    _fn = getattr(_c, _name)
    _fn.restype, _fn.argtypes = _sig


def _type_name(t):
    name = _c.tm_type_name(t.contents.type)
    return name.decode() if name else f"type {t.contents.type}"


class safe_open:   # noqa: N801 (safetensors' name)
    """safetensors.safe_open(filename, framework, device="cpu") over tensormap.open: a GGUF or
    safetensors file, an index.json, a split GGUF set, a URL. framework "np" gives numpy arrays
    (read-only views of the mapping where zero-copy), "pt" torch tensors (copy-on-write
    mappings where zero-copy: writing to one never reaches the file). all_shards and mmap as in
    tensormap.open."""

    def __init__(self, filename, framework, device="cpu", *, all_shards=False, mmap=True):
        if framework not in FRAMEWORKS:
            raise ValueError(f"framework={framework!r}: tensormap.safe_open gives \"np\" (numpy) "
                             "or \"pt\" (PyTorch)")
        if device != "cpu":
            raise ValueError(f"device={device!r}: tensormap.safe_open reads into CPU memory "
                             "only (move the tensors with .to(device))")
        self._framework = FRAMEWORKS[framework]
        if self._framework == "pt":
            from . import _torch
            self._torch = _torch
        self._file = File(filename, all_shards=all_shards, mmap=mmap)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Tensors already handed out stay valid (they keep what they view alive)."""
        self._file.close()

    def __repr__(self):
        return f"<tensormap.safe_open {self._file.path!r} framework={self._framework!r}>"

    # ---- the index ---------------------------------------------------------------------------

    def keys(self):
        """Tensor names, sorted (as safetensors sorts them)."""
        return sorted(self._file.keys())

    def offset_keys(self):
        """Tensor names in the order of their bytes: by shard, then offset."""
        f = self._file
        h = f._live()
        order = [(t.shard, t.offset, i) for i, t in
                 ((i, _c.tm_tensor_at(h.ptr, i).contents) for i in range(len(f)))]
        names = f.keys()
        return [names[i] for _, _, i in sorted(order)]

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self._file)

    def __contains__(self, name):
        return name in self._file

    def prefetch(self, names=None):
        """File.prefetch: the named tensors (None: all) read ahead of get_tensor()."""
        return self._file.prefetch(names)

    def metadata(self):
        """The file's metadata as a dict, or None when it has none (safetensors: __metadata__,
        string to string; GGUF: every entry, values typed as tensormap.File.metadata gives
        them)."""
        return self._file.metadata() or None

    # ---- tensors -----------------------------------------------------------------------------

    def get_tensor(self, name, *, dtype=None):
        """The whole tensor: stored types as stored, quantized ones decoded to float32 (or
        dtype= "f16"/"bf16"/"f32", or the numpy or torch dtype)."""
        return self.get_slice(name, dtype=dtype)[...]

    def get_slice(self, name, *, dtype=None):
        """A Slice: shape and dtype now, values when indexed."""
        self._file._tensor(name)   # an unknown name fails here, as in safetensors
        return Slice(self, name, requested(dtype))

    # ---- reading -----------------------------------------------------------------------------

    def _kind(self, t, want):
        """What comes out: ("stored", numpy dtype) or ("decoded", tensormap type name)."""
        kind = _type_name(t)
        stored = STORED.get(kind)
        if stored and (want == kind or want is None and
                       not (kind == "bf16" and self._framework == "np")):
            return "stored", np.dtype(stored[1])
        if stored and kind not in DECODED:
            raise _error(InvalidError, "INVALID_ARG",
                         f"tensor {_text(t.contents.name)!r} holds {kind} values, which keep "
                         f"their type: dtype={want!r} applies to float tensors",
                         path=str(self._file.path))
        return "decoded", want or "f32"

    def _read(self, name, want, key):
        h, t = self._file._tensor(name)
        shape = _shape(t)
        items, out_shape = _index.expand(shape, key)
        how, what = self._kind(t, want)
        kind = _type_name(t) if how == "stored" else what
        empty_dtype = what if how == "stored" else np.dtype(DECODED[what][0])
        if 0 in out_shape or 0 in shape:
            return self._out(np.empty(out_shape, empty_dtype), kind)
        if how == "stored":
            whole = self._zero_copy(h, t, shape, what, private=self._framework == "pt")
            if whole is not None:
                return self._out(whole[tuple(_index.shifted(i, 0) for i in items) + (...,)],
                                 kind)
        if not shape:   # a scalar
            window, items = self._window(h, t, (), what, how, 0, 1, None), []
        else:
            lo, hi = _index.span(items[0])
            cols = _index.span(items[-1]) if len(shape) > 1 and how == "decoded" else None
            window = self._window(h, t, shape, what, how, lo, hi, cols)
            items = [_index.shifted(items[0], lo)] + items[1:]
            if cols is not None:
                items[-1] = _index.shifted(items[-1], self._cols_start(t, cols))
        got = window[tuple(items) + (...,)]   # the ... keeps a 0-d result an array
        if got.size != window.size:   # a cut: keep only what was asked for
            got = np.ascontiguousarray(got)
        return self._out(got, kind)

    def _out(self, array, kind):
        return self._torch.tensor(array, kind) if self._framework == "pt" else array

    def _zero_copy(self, h, t, shape, dtype, private):
        """The whole tensor as an array of its stored dtype over the file's bytes (File._view),
        or None when that cannot be: a remote file, bytes not aligned to the element size, BOOL
        (its bytes may be any value, numpy's bool only 0 or 1). Read-only, or private: a
        writable copy-on-write mapping (for torch and DLPack consumers, which may write)."""
        tc = t.contents
        if not tc.data or tc.data % dtype.itemsize or dtype == np.bool_:
            return None
        raw = self._file._view(h, t, writable=private)
        return None if raw is None else raw.view(dtype).reshape(shape)

    def _cols_start(self, t, cols):
        """The first column of the block-aligned column span that holds cols."""
        block = _c.tm_type_block_elems(t.contents.type) or 1
        return cols[0] // block * block

    def _window(self, h, t, shape, what, how, lo, hi, cols):
        """Positions [lo, hi) of the first dimension, read into a new array of shape
        (hi - lo, *shape[1:]); for a decoded tensor with cols, only the blocks holding columns
        cols of each row are decoded, and the array's last dimension is those blocks'."""
        f = self._file
        inner = math.prod(shape[1:])
        if how == "stored":
            out = _memory.empty((hi - lo,) + tuple(shape[1:]), what)
            f._own_values(t, lo * inner, out)
            return out if shape else out.reshape(())
        row = t.contents.ne[0]
        block = _c.tm_type_block_elems(t.contents.type) or 1
        if len(shape) <= 1:   # one row: whole blocks around [lo, hi)
            first, last = lo // block * block, min(-(-hi // block) * block, row)
            out = self._decode(lambda buf, err: _c.tm_dequant_elements(
                t, first, last - first, buf, err), (last - first,), what)
            return out[lo - first:hi - first] if shape else out.reshape(())
        rows_per = inner // row
        r0, r1 = lo * rows_per, hi * rows_per
        win_shape = (hi - lo,) + tuple(shape[1:-1])
        c0 = self._cols_start(t, cols)
        c1 = min(-(-cols[1] // block) * block, row)
        if c1 - c0 == row:
            return self._decode(lambda buf, err: _c.tm_dequant_rows_mt(
                t, r0, r1, buf, 0, err), win_shape + (row,), what)

        def by_row(buf, err):
            width = (c1 - c0) * 4
            for i, r in enumerate(range(r0, r1)):
                status = _c.tm_dequant_elements(t, r * row + c0, c1 - c0, buf + i * width, err)
                if status:
                    return status
            return 0
        return self._decode(by_row, win_shape + (c1 - c0,), what)

    def _decode(self, call, shape, what):
        """call(address, err) decodes float32 values of this shape into a new array; for f16 or
        bf16 they are then rounded into the array returned (tm_f32_to_f16/bf16, as torch's
        .to() rounds)."""
        out = _memory.empty(shape, np.float32)
        err = _lib.Error()
        if out.size and call(out.ctypes.data, ctypes.byref(err)) != 0:
            raise _from_c(InvalidError, err, str(self._file.path))
        if what == "f32":
            return out
        half = _memory.empty(shape, DECODED[what][0])
        convert = _c.tm_f32_to_f16 if what == "f16" else _c.tm_f32_to_bf16
        convert(out.ctypes.data, half.ctypes.data, out.size)
        return half


class Slice:
    """safetensors' PySafeSlice: get_shape(), get_dtype(), and numpy's basic indexing
    ([a:b], [:, c:d], [i], steps, negative indices, ...), which reads only what it needs."""

    def __init__(self, owner, name, want):
        self._owner, self._name, self._want = owner, name, want

    def _t(self):
        return self._owner._file._tensor(self._name)[1]

    def get_shape(self):
        return list(_shape(self._t()))

    def get_dtype(self):
        """safetensors' name of the stored type ("F32", "BF16", "I64"), or tensormap's for one
        safetensors has none for ("q4_K")."""
        kind = _type_name(self._t())
        return STORED[kind][0] if kind in STORED else kind

    def __len__(self):
        shape = _shape(self._t())
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        return shape[0]

    def __getitem__(self, key):
        return self._owner._read(self._name, self._want, key)

    def __dlpack__(self, stream=None):
        """The whole tensor, zero-copy, through DLPack (torch.from_dlpack, numpy.from_dlpack):
        for a stored type whose bytes are mapped and aligned (a copy-on-write mapping, so the
        consumer may write), BufferError otherwise."""
        owner = self._owner
        h, t = owner._file._tensor(self._name)
        kind = _type_name(t)
        how, dtype = owner._kind(t, self._want or kind)   # as stored, whatever the framework
        if how != "stored":
            raise BufferError(f"tensor {self._name!r} is {kind}: it must be decoded, so there "
                              "is nothing to share (use get_tensor)")
        whole = owner._zero_copy(h, t, _shape(t), dtype, private=True)
        if whole is None:
            raise BufferError(f"tensor {self._name!r}: its bytes are not mapped and aligned, so "
                              "there is nothing to share (use get_tensor)")
        if kind == "bf16":   # numpy's DLPack would call the bits uint16
            from . import _torch
            return _torch.tensor(whole, kind).__dlpack__()
        return whole.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)   # kDLCPU, device 0
