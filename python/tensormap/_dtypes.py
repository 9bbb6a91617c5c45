"""Element types as safe_open hands them out: the stored ones by their safetensors names, and the
float types a decoded tensor may be asked for (dtype=)."""

import numpy as np

# tensormap's type name (tm_type_name) -> (safetensors' dtype name, numpy dtype of the stored
# values, torch dtype name). numpy has no bfloat16: its values are the bits, as uint16.
STORED = {
    "f32": ("F32", "<f4", "float32"),
    "f16": ("F16", "<f2", "float16"),
    "bf16": ("BF16", "<u2", "bfloat16"),
    "f64": ("F64", "<f8", "float64"),
    "i8": ("I8", "|i1", "int8"),
    "i16": ("I16", "<i2", "int16"),
    "i32": ("I32", "<i4", "int32"),
    "i64": ("I64", "<i8", "int64"),
    "U8": ("U8", "|u1", "uint8"),
    "U16": ("U16", "<u2", "uint16"),
    "U32": ("U32", "<u4", "uint32"),
    "U64": ("U64", "<u8", "uint64"),
    "BOOL": ("BOOL", "|b1", "bool"),
}
# The float types a decoded tensor comes out in, by tensormap's type name: numpy dtype (bf16 as
# its bits) and torch dtype name.
DECODED = {"f32": ("<f4", "float32"), "f16": ("<f2", "float16"), "bf16": ("<u2", "bfloat16")}
_SPELLINGS = {"f32": "f32", "float32": "f32", "float": "f32",
              "f16": "f16", "float16": "f16", "half": "f16",
              "bf16": "bf16", "bfloat16": "bf16"}


def requested(dtype):
    """dtype= as one of DECODED's keys, or None. Takes "f32"/"float32"/"F32" (any case), a numpy
    dtype, or a torch dtype (torch.bfloat16), without importing torch."""
    if dtype is None:
        return None
    if isinstance(dtype, str):
        text = dtype
    elif type(dtype).__module__ == "torch":
        text = str(dtype).rpartition(".")[2]
    else:
        try:
            text = np.dtype(dtype).name
        except TypeError:
            text = repr(dtype)
    kind = _SPELLINGS.get(text.lower())
    if kind is None:
        raise ValueError(f"dtype={dtype!r}: tensormap decodes to float32, float16 or bfloat16 "
                         "(\"f32\", \"f16\", \"bf16\", or the numpy or torch dtype)")
    return kind
