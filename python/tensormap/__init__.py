"""tensormap: read GGUF and safetensors model files in place, from Python.

    import tensormap
    with tensormap.safe_open("model.safetensors", framework="pt") as f:   # safetensors' API
        w = f.get_tensor("model.embed_tokens.weight")   # stored dtype (bf16), zero-copy
        part = f.get_slice("lm_head.weight")[0:4096]     # reads only those rows
    with tensormap.open("model.gguf") as f:
        w = f.get_tensor("blk.0.attn_q.weight")    # float32, PyTorch shape, decoded in C
        ids = f.get_tensor("position_ids")         # an integer tensor comes back as itself

A thin ctypes layer over the C library (include/tensormap.h) and numpy: the file is mapped once,
get_raw() returns a read-only view of a tensor's bytes in the mapping, get_tensor() decodes
straight into a new numpy array with the library's threaded kernels. See docs/python.md."""

import ctypes
import difflib
import errno
import os
import weakref

import numpy as np

from . import _lib, _memory

__all__ = ["open", "safe_open", "File", "Error", "FileError", "InvalidError",
           "UnknownNameError", "can_decode", "isa", "__version__"]

_c = _lib.load()
__version__ = _c.tm_version().decode()

OPEN_NO_MMAP = 1 << 0       # enum tm_open_flags
OPEN_ALL_SHARDS = 1 << 1
MATVEC_MODES = {"f32": 0, "q8": 1}   # TM_MATVEC_F32, TM_MATVEC_Q8

# GGUF value types by the library's own names (tm_vtype_name), as numpy dtypes: the ids are
# never spelled here.
_ARRAY_DTYPES = {"u8": "<u1", "i8": "<i1", "u16": "<u2", "i16": "<i2", "u32": "<u4",
                 "i32": "<i4", "f32": "<f4", "u64": "<u8", "i64": "<i8", "f64": "<f8",
                 "bool": "<u1"}
_VTYPE_NAMES = {}
for _id in range(64):
    _name = _c.tm_vtype_name(_id)
    if _name is not None:
        _VTYPE_NAMES[_id] = _name.decode()
# Element types that keep their own dtype in get_tensor and get_rows, by the library's names:
# float32 would round f64 and the wider integers (I64 2^53 + 1, F64 1e300), so these are read
# from the tensor's bytes, exactly; every other type decodes to float32, which holds its values.
_OWN_DTYPES = {"f64": "<f8", "i8": "|i1", "i16": "<i2", "i32": "<i4", "i64": "<i8",
               "U8": "|u1", "U16": "<u2", "U32": "<u4", "U64": "<u8", "BOOL": "|b1"}
# Element type names (tm_type_name) -> ids; GGUF ids are below 64, safetensors-only ones from
# 1024.
_TYPE_IDS = {}
for _id in [*range(64), *range(1024, 1088)]:
    _name = _c.tm_type_name(_id)
    if _name is not None:
        _TYPE_IDS[_name.decode()] = _id


def can_decode(type_name):
    """Whether get_tensor() can decode tensors of this type ("q4_K", "BF16", ...)."""
    return type_name in _TYPE_IDS and _c.tm_type_can_dequant(_TYPE_IDS[type_name])


def isa():
    """The instruction-set path the kernels use: "scalar", "avx2", "avx512", "avx512fp16" or
    "neon"."""
    return _c.tm_isa().decode()


class Error(Exception):
    """An error from tensormap. message is the library's message (it names the entry, its index
    and the byte offset); code is the status name ("TRUNCATED", "UNSUPPORTED", ...); offset is
    the byte offset in the file where reading stopped making sense, or None; path is the file."""

    def __str__(self):
        return self.args[0]


class FileError(Error, OSError):
    """The file could not be opened, read or mapped (codes IO, NOT_FOUND, NOMEM from open)."""


class InvalidError(Error, ValueError):
    """The file's contents, or the arguments of a call, are not something tensormap accepts:
    a damaged or unsupported file, a type with no decoder, an unknown tensor name, rows out of
    range, a closed file."""


class UnknownNameError(InvalidError, KeyError):
    """No tensor of that name (code NOT_FOUND): a KeyError too, as a dict lookup would raise;
    the message names the closest names the file has."""


# FileError by errno, so that `except FileNotFoundError` (PermissionError, IsADirectoryError)
# catches what the standard library's open() would raise for the same path.
class _FileNotFound(FileError, FileNotFoundError):
    pass


class _PermissionDenied(FileError, PermissionError):
    pass


class _IsADirectory(FileError, IsADirectoryError):
    pass


_BY_ERRNO = {errno.ENOENT: _FileNotFound, errno.EACCES: _PermissionDenied,
             errno.EPERM: _PermissionDenied, errno.EISDIR: _IsADirectory}


def _error(cls, code, message, offset=None, path=None):
    e = cls(f"{path}: {message}" if path else message)
    e.code, e.message, e.offset, e.path = code, message, offset, path
    return e


def _from_c(cls, err, path=None):
    offset = None if err.offset == _lib.NO_OFFSET else err.offset
    code = _c.tm_status_name(err.code).decode()
    return _error(cls, code, err.message.decode("utf-8", "replace"), offset, path)


def _open_error(err, path, spec):
    """tm_open's failure as the exception Python code expects. The library's tm_error carries no
    errno, so for a local path that failed to open (IO) the system is asked again, by opening it
    here; NOT_FOUND (a missing file or shard, HTTP 404) is ENOENT."""
    code = _c.tm_status_name(err.code)
    if code not in (b"IO", b"NOT_FOUND", b"NOMEM"):
        return _from_c(InvalidError, err, path)
    number = errno.ENOENT if code == b"NOT_FOUND" else None
    if code == b"IO" and "://" not in spec:
        try:
            fd = os.open(spec, os.O_RDONLY | os.O_CLOEXEC)
            is_dir = os.path.isdir(spec)
            os.close(fd)
            number = errno.EISDIR if is_dir else None
        except OSError as e:
            number = e.errno
    e = _from_c(_BY_ERRNO.get(number, FileError), err, path)
    e.errno, e.strerror, e.filename = number, e.message, path
    return e


def _text(s):
    """A tm_str from the file as str; bytes that are not UTF-8 survive as surrogates
    (s.encode("utf-8", "surrogateescape") gives the file's bytes back)."""
    return ctypes.string_at(s.ptr, s.len).decode("utf-8", "surrogateescape") if s.len else ""


class _Handle:
    """Owns the tm_file. The File and every array viewing the mapping hold a reference, and
    tm_close runs when the last of them goes: so close() with live views is deferred, and no
    array can outlive its mapping."""

    __slots__ = ("ptr", "__weakref__")

    def __init__(self, ptr):
        self.ptr = ptr
        # At interpreter exit the mapping goes with the process: arrays may still be in use by
        # other exit handlers, so no tm_close then.
        weakref.finalize(self, _c.tm_close, ptr).atexit = False


def _shape(t):
    dims = (ctypes.c_uint64 * _lib.MAX_DIMS)()
    n = _c.tm_tensor_shape(t, dims)
    return tuple(dims[:n])


class File:
    """An open model file: one GGUF or safetensors file, a checkpoint's index.json, or every
    shard of a checkpoint. Use as a context manager, or call close()."""

    def __init__(self, path, *, all_shards=False, mmap=True):
        self.path = path
        spec = str(path)
        if spec.startswith("ollama:"):
            from ._ollama import blob_path
            spec = blob_path(spec[len("ollama:"):])
        flags = (0 if mmap else OPEN_NO_MMAP) | (OPEN_ALL_SHARDS if all_shards else 0)
        ptr = ctypes.c_void_p()
        err = _lib.Error()
        status = _c.tm_open(spec.encode("utf-8", "surrogateescape"), flags, ctypes.byref(ptr),
                            ctypes.byref(err))
        if status != 0:
            raise _open_error(err, str(path), spec)
        self._handle = _Handle(ptr.value)
        self._names = None
        self._cow = None   # _memory.CopyOnWrite: what zero-copy views map
        self._in_memory = not mmap
        if mmap and not _c.tm_file_is_remote(ptr.value):
            n = _c.tm_file_layout(ptr.value).contents.n_shards
            self._cow = _memory.CopyOnWrite(
                self.shards(), [_c.tm_shard_layout(ptr.value, i).contents.file_size
                                for i in range(n)])

    # ---- lifetime ----------------------------------------------------------------------------

    def close(self):
        """Close the file. The mapping is released now if no array views it, otherwise when the
        last such array is gone (arrays from get_raw() stay readable). Calling it again does
        nothing; any other call on a closed File raises InvalidError."""
        self._handle = None
        self._cow = None

    @property
    def closed(self):
        return self._handle is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<tensormap.File {self.path!r}{' closed' if self.closed else ''}>"

    def _live(self):
        h = self._handle
        if h is None:
            raise _error(InvalidError, "INVALID_ARG", "the file is closed", path=str(self.path))
        return h

    def _tensor(self, name):
        """(handle, tm_tensor pointer); the caller keeps the handle for as long as it uses the
        tensor, so a close() from another thread cannot unmap it underneath."""
        h = self._live()
        key = name.encode("utf-8", "surrogateescape")
        t = _c.tm_tensor_findn(h.ptr, key, len(key))
        if not t:
            close = difflib.get_close_matches(name, self.keys(), n=3, cutoff=0.6)
            hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else \
                f" (it has {len(self)} tensors: keys() lists them)"
            raise _error(UnknownNameError, "NOT_FOUND", f"no tensor named {name!r}{hint}",
                         path=str(self.path))
        return h, t

    # ---- the index ---------------------------------------------------------------------------

    def keys(self):
        """Tensor names in file order (GGUF: info order; safetensors: data order)."""
        h = self._live()
        if self._names is None:
            self._names = [_text(_c.tm_tensor_at(h.ptr, i).contents.name)
                           for i in range(_c.tm_n_tensors(h.ptr))]
        return list(self._names)

    def __contains__(self, name):
        key = name.encode("utf-8", "surrogateescape")
        return bool(_c.tm_tensor_findn(self._live().ptr, key, len(key)))

    def __len__(self):
        return _c.tm_n_tensors(self._live().ptr)

    def __iter__(self):
        return iter(self.keys())

    def __getitem__(self, name):
        """f[name] is f.get_tensor(name)."""
        return self.get_tensor(name)

    def info(self, name):
        """{"type": "q4_K", "shape": PyTorch order (slowest first), "offset": from the data
        section's start as the file says, "file_offset": from the start of the tensor's file,
        "nbytes", "shard": index into shards()}."""
        h, t = self._tensor(name)
        tc = t.contents
        type_name = _c.tm_type_name(tc.type)
        return {"type": type_name.decode() if type_name else f"type {tc.type}",
                "shape": _shape(t), "offset": tc.offset,
                "file_offset": _c.tm_shard_layout(h.ptr, tc.shard).contents.data_start + tc.offset,
                "nbytes": tc.n_bytes, "shard": tc.shard}

    def fetched(self):
        """What was downloaded for a file opened by URL, so far: (bytes, requests); (0, 0) for a
        local file."""
        got, requests = ctypes.c_uint64(), ctypes.c_uint64()
        _c.tm_file_fetched(self._live().ptr, ctypes.byref(got), ctypes.byref(requests))
        return got.value, requests.value

    def prefetch(self, names=None):
        """Start reading the named tensors (a name, a list of names, or None for every tensor)
        ahead of their decode, and return at once: get_tensor() and the others then find their
        bytes on the way or there. A local file asks the kernel for the pages; a file opened by
        URL fetches them on a thread of its own into a buffer of at most TM_PREFETCH_LIMIT bytes
        (256 MiB), what does not fit being fetched when it is read, as without a plan. An empty
        list drops what was fetched and not read yet. Returns the bytes planned (0 for a file
        held in memory). An unknown name raises UnknownNameError, and nothing is planned."""
        h = self._live()
        names = self.keys() if names is None else [names] if isinstance(names, str) else names
        plan = (_lib.PrefetchRange * max(len(names), 1))()
        for i, name in enumerate(names):
            plan[i] = _lib.PrefetchRange(self._tensor(name)[1], 0, _lib.PREFETCH_TO_END)
        planned, err = ctypes.c_uint64(), _lib.Error()
        if _c.tm_prefetch(h.ptr, plan, len(names), ctypes.byref(planned), ctypes.byref(err)):
            raise _from_c(InvalidError, err, str(self.path))
        return planned.value

    def shards(self):
        """The paths of the files behind this index (one unless a sharded checkpoint)."""
        h = self._live()
        n = _c.tm_file_layout(h.ptr).contents.n_shards
        return [_c.tm_shard_path(h.ptr, i).decode("utf-8", "surrogateescape") for i in range(n)]

    def metadata(self):
        """Every metadata entry in file order, as a dict: integers as int, floats as float, bool,
        strings as str, arrays as lists of those (numeric arrays become lists, not numpy arrays:
        they are small, and lists compare and serialise like the scalars do)."""
        h = self._live()
        out = {}
        for i in range(_c.tm_n_kv(h.ptr)):
            kv = _c.tm_kv_at(h.ptr, i)
            out[_text(kv.contents.key)] = self._value(kv)
        return out

    def _value(self, kv):
        vtype = _VTYPE_NAMES.get(kv.contents.type)
        if vtype != "arr":
            v = _lib.Value()
            status = _c.tm_kv_value(kv, ctypes.byref(v))
            if status != 0:
                raise _error(InvalidError, _c.tm_status_name(status).decode(),
                             f"metadata entry {_text(kv.contents.key)!r} has type {vtype}",
                             kv.contents.offset, str(self.path))
            return (_text(v.as_.s) if vtype == "str" else v.as_.b if vtype == "bool"
                    else v.as_.f if vtype in ("f32", "f64")
                    else v.as_.i if vtype.startswith("i") else v.as_.u)
        elem = _VTYPE_NAMES.get(kv.contents.elem_type)
        if elem == "str":
            it, s, items = _lib.StrIter(), _lib.Str(), []
            _c.tm_kv_strings(kv, ctypes.byref(it))
            while _c.tm_str_next(ctypes.byref(it), ctypes.byref(s)):
                items.append(_text(s))
            return items
        if elem not in _ARRAY_DTYPES:
            raise _error(InvalidError, "UNSUPPORTED",
                         f"metadata entry {_text(kv.contents.key)!r}: arrays of {elem}",
                         kv.contents.offset, str(self.path))
        raw = ctypes.string_at(kv.contents.data, kv.contents.data_bytes) \
            if kv.contents.data_bytes else b""
        values = np.frombuffer(raw, dtype=_ARRAY_DTYPES[elem])
        return (values != 0).tolist() if elem == "bool" else values.tolist()

    # ---- tensor data -------------------------------------------------------------------------

    def get_raw(self, name):
        """The tensor's bytes as a read-only numpy uint8 array viewing the file: no copy,
        constant time. The array keeps what it views alive (even past close()). For a remote
        file (a URL), the bytes are fetched into a new array instead."""
        h, t = self._tensor(name)
        n = t.contents.n_bytes
        view = self._view(h, t, writable=False) if n else None
        if view is None:
            view = np.empty(n, np.uint8)
            if n:
                self._fetch(t, 0, view)
            view.flags.writeable = False
        return view

    def _view(self, h, t, writable):
        """The tensor's bytes without a copy, as a uint8 array, or None when there is nothing
        to view without risk (the caller then copies). A file opened mapped is viewed through a
        copy-on-write mapping of its own (_memory.CopyOnWrite: a write, even by torch, cannot
        fault or reach the file), never through the library's PROT_READ mapping; read-only
        unless writable. mmap=False: the library's copy in memory, read-only only (writing
        into it would change what later decodes see)."""
        tc = t.contents
        if not tc.data:
            return None
        cow = self._cow
        if cow is not None:
            start = _c.tm_shard_layout(h.ptr, tc.shard).contents.data_start + tc.offset
            view = cow.view(tc.shard, start, tc.n_bytes, writable)
            if view is not None:
                return view
        if writable or not self._in_memory:
            return None
        return np.asarray(_memory.ReadOnly(h, tc.data, tc.n_bytes))

    @staticmethod
    def _dtype(t):
        """The dtype the tensor's values come out in: its own for f64, the integers and bool,
        float32 (decoded) for every other type."""
        type_name = _c.tm_type_name(t.contents.type)
        own = _OWN_DTYPES.get(type_name.decode()) if type_name else None
        return np.dtype(own) if own else np.dtype(np.float32)

    def _fetch(self, t, offset, raw):
        """Bytes [offset, offset + raw.size) of the tensor's data into the uint8 array raw: from
        the mapping, or by HTTP for a URL (tm_tensor_fetch)."""
        err = _lib.Error()
        if _c.tm_tensor_fetch(t, offset, raw.size, raw.ctypes.data, ctypes.byref(err)) != 0:
            raise _from_c(FileError if _c.tm_status_name(err.code) in (b"IO", b"NOT_FOUND")
                          else InvalidError, err, str(self.path))

    def _own_values(self, t, first, out):
        """Values [first, first + out.size) of a tensor of its own dtype, copied from its bytes
        into out; a bool's byte is true when it is not 0."""
        raw = out.reshape(-1).view(np.uint8)
        self._fetch(t, first * out.dtype.itemsize, raw)
        if out.dtype == np.bool_:
            np.not_equal(raw, 0, out=raw)

    def get_tensor(self, name, out=None):
        """The whole tensor in PyTorch shape: decoded to float32 by the library's threaded
        kernels (tm_dequant_tensor on every online CPU) straight into the returned array, or,
        for f64, integer and bool tensors, their own values exactly in their own dtype (int64,
        float64, uint8, bool, ...), which float32 would round.
        out: a C-contiguous, writeable array of that dtype and as many elements to fill (and
        return) instead of a new one; reusing one saves the kernel's zeroing of fresh pages."""
        h, t = self._tensor(name)
        dtype = self._dtype(t)
        if out is None:
            out = _memory.empty(_shape(t), dtype)
        elif not (isinstance(out, np.ndarray) and out.dtype == dtype and
                  out.flags.c_contiguous and out.flags.writeable and
                  out.size == t.contents.n_elements):
            raise _error(InvalidError, "INVALID_ARG",
                         f"tensor {name!r}: out must be a C-contiguous, writeable {dtype} array "
                         f"of {t.contents.n_elements} elements", path=str(self.path))
        if out.size and dtype != np.float32:
            self._own_values(t, 0, out)
        elif out.size:
            err = _lib.Error()
            if _c.tm_dequant_tensor(t, out.ctypes.data, 0, ctypes.byref(err)) != 0:
                raise _from_c(InvalidError, err, str(self.path))
        return out

    def get_rows(self, name, r0, r1):
        """Rows [r0, r1) as an array of shape (r1 - r0, row length), where a row is the last
        PyTorch dimension (ne[0] in GGUF's terms) and rows run over all the others: float32, or
        the tensor's own dtype as get_tensor gives it."""
        h, t = self._tensor(name)
        rows = _c.tm_tensor_rows(t)
        if not (0 <= r0 <= r1 <= rows):
            raise _error(InvalidError, "INVALID_ARG",
                         f"tensor {name!r}: rows [{r0}, {r1}) are not within its {rows} rows",
                         path=str(self.path))
        out = _memory.empty((r1 - r0, t.contents.ne[0]), self._dtype(t))
        if out.size and out.dtype != np.float32:
            self._own_values(t, r0 * t.contents.ne[0], out)
        elif out.size:
            err = _lib.Error()
            if _c.tm_dequant_rows(t, r0, r1, out.ctypes.data, ctypes.byref(err)) != 0:
                raise _from_c(InvalidError, err, str(self.path))
        return out

    def matvec(self, name, x, mode="f32"):
        """y = W x on the blocks where they lie (tm_matvec, all online CPUs), without a float32
        copy of W: one float32 value per row of W (a row is the last PyTorch dimension, so a
        (out_features, in_features) weight gives out_features values). x: in_features values,
        converted to contiguous float32. mode "f32": x stays float32, |y - W x| <= 1e-6 max|y|;
        "q8": x quantized to 8 bits once, as ggml does (faster; docs/matvec.md has the bound)."""
        h, t = self._tensor(name)
        if mode not in MATVEC_MODES:
            raise _error(InvalidError, "INVALID_ARG", f"matvec mode {mode!r}: it is one of "
                         f"{', '.join(map(repr, MATVEC_MODES))}", path=str(self.path))
        x = np.ascontiguousarray(x, dtype=np.float32)
        columns = t.contents.ne[0]
        if x.shape != (columns,):
            got = f"{x.size} values" if x.ndim == 1 else f"shape {x.shape}"
            raise _error(InvalidError, "INVALID_ARG", f"tensor {name!r} of shape {_shape(t)}: x "
                         f"has {got} where {columns} are needed (one per column, its last "
                         "dimension)", path=str(self.path))
        y = np.empty(_c.tm_tensor_rows(t), np.float32)
        err = _lib.Error()
        if _c.tm_matvec(t, x.ctypes.data, y.ctypes.data, MATVEC_MODES[mode], 0,
                        ctypes.byref(err)) != 0:
            raise _from_c(InvalidError, err, str(self.path))
        return y

    def matmul(self, name, X, mode="f32"):
        """Y = W X for the columns of X at once (tm_matmul, all online CPUs): W is read once, not
        once per column. X: shape (in_features, n), n >= 1, converted to float32; returns float32
        of shape (out_features, n) as numpy's W @ X, each column bit for bit matvec's for that
        column in the same mode."""
        h, t = self._tensor(name)
        X = np.asarray(X)
        k = t.contents.ne[0]
        if X.ndim != 2 or X.shape[0] != k or X.shape[1] == 0 or mode not in MATVEC_MODES:
            raise _error(InvalidError, "INVALID_ARG",
                         f"tensor {name!r}: X must have shape ({k}, n >= 1) (it has shape "
                         f"{X.shape}) and mode be one of {sorted(MATVEC_MODES)} (not {mode!r})",
                         path=str(self.path))
        cols = np.ascontiguousarray(X.T, dtype=np.float32)   # tm_matmul's X: column j contiguous
        Y = np.empty((X.shape[1], _c.tm_tensor_rows(t)), np.float32)
        err = _lib.Error()
        if _c.tm_matmul(t, cols.ctypes.data, k, X.shape[1], Y.ctypes.data, MATVEC_MODES[mode], 0,
                        ctypes.byref(err)) != 0:
            raise _from_c(InvalidError, err, str(self.path))
        return np.ascontiguousarray(Y.T)


def open(path, *, all_shards=False, mmap=True):   # noqa: A001 (the safetensors package's name)
    """Open a GGUF file, a safetensors file, a model.safetensors.index.json (every shard), or
    "ollama:NAME[:TAG]" (the GGUF blob of an Ollama model). all_shards: a safetensors shard
    opens its whole checkpoint. mmap=False reads the file into memory instead of mapping it."""
    return File(path, all_shards=all_shards, mmap=mmap)

from ._safe_open import safe_open   # noqa: E402 (it builds on File)
from .gguf_reader import *  # noqa: E402,F401,F403 gguf-py's reader (docs/python.md); last: it uses the above
