"""numpy's basic indexing (integers, slices with steps and negative bounds, ...) of a tensor that
is not read yet: which span of it must be read, and the index to apply to that span."""

import numpy as np

_ONE_BYTE = bytes(1)   # what the stand-in below views, every element of it


def _is_int(k):
    return isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))


def expand(shape, key):
    """One item per dimension: an int (the dimension goes) or a range. Raises IndexError and
    TypeError as numpy does for the same index; returns (items, the result's shape)."""
    if not isinstance(key, tuple):
        key = (key,)
    for k in key:
        if not (k is Ellipsis or isinstance(k, slice) or _is_int(k)):
            raise TypeError("tensormap slices take integers, slices and ... (numpy's basic "
                            f"indexing), not {type(k).__name__}")
    # numpy checks the index (counts, bounds) and gives the result's shape, on a stand-in of
    # the tensor's shape that holds one byte.
    stand_in = np.ndarray(shape, np.uint8, _ONE_BYTE, 0, (0,) * len(shape))
    out_shape = np.shape(stand_in[key])
    at = [i for i, k in enumerate(key) if k is Ellipsis]
    if at:
        key = key[:at[0]] + (slice(None),) * (len(shape) - len(key) + 1) + key[at[0] + 1:]
    key = key + (slice(None),) * (len(shape) - len(key))
    items = [int(k) % n if _is_int(k) else range(*k.indices(n)) for k, n in zip(key, shape)]
    return items, out_shape


def span(item):
    """[lo, hi) of the positions an item takes, or None when it takes none."""
    if isinstance(item, int):
        return item, item + 1
    if not item:
        return None
    return min(item[0], item[-1]), max(item[0], item[-1]) + 1


def shifted(item, lo):
    """The item relative to a span starting at lo (the index into a window of the tensor)."""
    if isinstance(item, int):
        return item - lo
    stop = item.stop - lo
    # a negative step that runs down to position 0 stops at -1, which as a slice bound would
    # count from the end: None says "through the start"
    return slice(item.start - lo, stop if stop >= 0 else None, item.step)
