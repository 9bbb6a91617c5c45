"""numpy arrays as PyTorch tensors for safe_open(framework="pt"), sharing their memory.

Imported only when "pt" is asked for, so the package never needs PyTorch otherwise. The arrays
given here are always writable (fresh memory, or a copy-on-write mapping of the file): torch has
no read-only tensors, and torch.from_numpy of a read-only view of the library's mapping would
let an in-place op (mul_) write into memory mapped without PROT_WRITE and kill the process."""

try:
    import torch
except ImportError as e:   # pragma: no cover (the tests that need torch skip without it)
    raise ImportError("tensormap.safe_open(framework=\"pt\") needs PyTorch (Debian: "
                      "apt-get install python3-torch)") from e

import numpy as np

from . import InvalidError, _error
from ._dtypes import DECODED, STORED


def tensor(array, kind):
    """The array as a torch tensor of kind's dtype (a tensormap type name), without a copy
    unless numpy and torch disagree on layout (negative strides, which torch cannot hold)."""
    name = (STORED.get(kind) or (None, None, DECODED[kind][1]))[2]
    dtype = getattr(torch, name, None)
    if dtype is None:
        raise _error(InvalidError, "UNSUPPORTED", f"this PyTorch ({torch.__version__}) has no "
                     f"torch.{name} for {kind} values: read them with framework=\"np\"")
    assert array.flags.writeable, "a read-only array would let torch write into the mapping"
    if any(s < 0 for s in array.strides):
        array = array.copy()
    if name == "bfloat16":      # numpy holds the bits as uint16, which older torch refuses
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)
