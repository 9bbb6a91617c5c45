"""The C library through ctypes: where it is found, the structs of include/tensormap.h, the
signatures of the functions the package calls.

The struct layouts below mirror include/tensormap.h field for field; python/tests/test_abi.py
compiles a C program that prints sizeof and offsetof of every field and compares them with these
declarations, so a change to the header cannot silently desynchronise them."""

import ctypes
import os
from ctypes import POINTER, Structure, Union, c_bool, c_char, c_char_p, c_double, c_int, \
    c_int64, c_size_t, c_uint, c_uint32, c_uint64, c_void_p

SONAME = "libtensormap.so.0"
ENV_LIBRARY = "TENSORMAP_LIBRARY"

# ---- structs (include/tensormap.h) ----------------------------------------------------------

# Enums are ints in C on every ABI this library builds for (test_abi checks their size).
c_enum = c_int

ERROR_MESSAGE_MAX = 512
NO_OFFSET = 2**64 - 1
MAX_DIMS = 4


class Str(Structure):
    _fields_ = [("ptr", c_void_p), ("len", c_uint64)]


class Error(Structure):
    _fields_ = [("code", c_enum), ("offset", c_uint64), ("message", c_char * ERROR_MESSAGE_MAX)]


class Layout(Structure):
    _fields_ = [("format", c_enum), ("version", c_uint32), ("n_kv", c_uint64),
                ("n_tensors", c_uint64), ("alignment", c_uint32), ("alignment_declared", c_bool),
                ("head_end", c_uint64), ("kv_end", c_uint64), ("infos_end", c_uint64),
                ("padding", c_uint64), ("data_start", c_uint64), ("data_size", c_uint64),
                ("tensors_end", c_uint64), ("file_size", c_uint64), ("n_shards", c_uint32)]


class Tensor(Structure):
    _fields_ = [("name", Str), ("type", c_enum), ("n_dims", c_uint32),
                ("ne", c_uint64 * MAX_DIMS), ("n_elements", c_uint64), ("offset", c_uint64),
                ("n_bytes", c_uint64), ("data", c_void_p), ("info_offset", c_uint64),
                ("info_bytes", c_uint64), ("shard", c_uint32), ("file", c_void_p)]


class Kv(Structure):
    _fields_ = [("key", Str), ("type", c_enum), ("elem_type", c_enum), ("count", c_uint64),
                ("data", c_void_p), ("data_bytes", c_uint64), ("offset", c_uint64),
                ("n_bytes", c_uint64)]


class ValueAs(Union):
    _fields_ = [("u", c_uint64), ("i", c_int64), ("f", c_double), ("b", c_bool), ("s", Str)]


class Value(Structure):
    _fields_ = [("type", c_enum), ("as_", ValueAs)]


class StrIter(Structure):
    _fields_ = [("p", c_void_p), ("end", c_void_p), ("left", c_uint64)]


class PrefetchRange(Structure):
    _fields_ = [("tensor", POINTER(Tensor)), ("offset", c_uint64), ("n_bytes", c_uint64)]


PREFETCH_TO_END = 2**64 - 1

# The C names of the structs above, for the layout test.
C_NAMES = {Str: "tm_str", Error: "tm_error", Layout: "tm_layout", Tensor: "tm_tensor", Kv: "tm_kv",
           Value: "tm_value", StrIter: "tm_str_iter", PrefetchRange: "tm_prefetch_range"}
# ctypes field name -> C field name where Python needs another spelling ("as" is a keyword).
C_FIELD = {"as_": "as"}

# ---- functions ------------------------------------------------------------------------------

_file_p = c_void_p
_tensor_p = POINTER(Tensor)
_kv_p = POINTER(Kv)
_err_p = POINTER(Error)
_float_p = c_void_p   # an address: numpy arrays pass arr.ctypes.data

SIGNATURES = {
    "tm_version": (c_char_p, []),
    "tm_status_name": (c_char_p, [c_enum]),
    "tm_type_name": (c_char_p, [c_enum]),
    "tm_type_can_dequant": (c_bool, [c_enum]),
    "tm_vtype_name": (c_char_p, [c_enum]),
    "tm_open": (c_enum, [c_char_p, c_uint, POINTER(_file_p), _err_p]),
    "tm_close": (None, [_file_p]),
    "tm_file_layout": (POINTER(Layout), [_file_p]),
    "tm_shard_layout": (POINTER(Layout), [_file_p, c_uint32]),
    "tm_shard_path": (c_char_p, [_file_p, c_uint32]),
    "tm_n_tensors": (c_uint64, [_file_p]),
    "tm_tensor_at": (_tensor_p, [_file_p, c_uint64]),
    "tm_tensor_findn": (_tensor_p, [_file_p, c_char_p, c_size_t]),
    "tm_tensor_rows": (c_uint64, [_tensor_p]),
    "tm_tensor_shape": (c_uint32, [_tensor_p, c_uint64 * MAX_DIMS]),
    "tm_n_kv": (c_uint64, [_file_p]),
    "tm_kv_at": (_kv_p, [_file_p, c_uint64]),
    "tm_kv_value": (c_enum, [_kv_p, POINTER(Value)]),
    "tm_kv_strings": (c_enum, [_kv_p, POINTER(StrIter)]),
    "tm_str_next": (c_bool, [POINTER(StrIter), POINTER(Str)]),
    "tm_tensor_fetch": (c_enum, [_tensor_p, c_uint64, c_uint64, c_void_p, _err_p]),
    "tm_prefetch": (c_enum, [_file_p, POINTER(PrefetchRange), c_size_t, POINTER(c_uint64),
                             _err_p]),
    "tm_file_is_remote": (c_bool, [_file_p]),
    "tm_file_fetched": (None, [_file_p, POINTER(c_uint64), POINTER(c_uint64)]),
    "tm_dequant_rows": (c_enum, [_tensor_p, c_uint64, c_uint64, _float_p, _err_p]),
    "tm_dequant_tensor": (c_enum, [_tensor_p, _float_p, c_uint, _err_p]),
    "tm_matvec": (c_enum, [_tensor_p, _float_p, _float_p, c_uint, c_uint, _err_p]),
    "tm_matmul": (c_enum, [_tensor_p, _float_p, c_uint64, c_uint64, _float_p, c_uint, c_uint,
                           _err_p]),
    "tm_isa": (c_char_p, []),
}


def _candidates():
    """Where the library is looked for, in order: $TENSORMAP_LIBRARY; the copy a wheel or
    `pip install .` put beside these modules (setup.py); for a `make install`ed package, the
    library directory it recorded (relative to the package); in the source tree, the build
    directory beside python/."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = os.environ.get(ENV_LIBRARY)
    if env:
        return [env]
    bundled = os.path.join(here, SONAME)
    if os.path.exists(bundled):
        return [bundled]
    try:
        from . import _installed   # written by `make install`
        return [os.path.normpath(os.path.join(here, _installed.LIBDIR, SONAME))]
    except ImportError:
        return [os.path.normpath(os.path.join(here, "..", "..", "build", SONAME))]


def load():
    tried = []
    lib = None
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as e:
            tried.append(f"{path} ({e})")
    if lib is None:
        raise ImportError("tensormap: cannot load the C library: tried " + "; ".join(tried) +
                          f". Build it with `make`, or point {ENV_LIBRARY} at libtensormap.so.0")
    for name, (restype, argtypes) in SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    lib.path = path
    return lib
