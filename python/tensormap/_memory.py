"""Memory behind the arrays the package hands out: fresh output buffers on transparent huge pages,
and copy-on-write mappings of a file for frameworks that have no read-only arrays (PyTorch)."""

import mmap
import os

import numpy as np

HUGE_PAGE = 2 << 20
# Below this a fresh array's page faults cost little next to the call itself.
_HUGE_FROM = 8 * HUGE_PAGE


def empty(shape, dtype):
    """An uninitialised C-contiguous array. A large one is its own anonymous mapping, 2 MiB
    aligned and advised MADV_HUGEPAGE: the decoding threads that first write it then take one
    fault per 2 MiB instead of one per 4 KiB, which is what made a fresh get_tensor slower than
    decoding into a buffer already touched. The mapping is freed with the array (its base)."""
    dtype = np.dtype(dtype)
    n_bytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if n_bytes < _HUGE_FROM or not hasattr(mmap, "MADV_HUGEPAGE"):
        return np.empty(shape, dtype)
    m = mmap.mmap(-1, n_bytes + HUGE_PAGE)
    whole = np.frombuffer(m, np.uint8)
    skip = -whole.ctypes.data % HUGE_PAGE
    m.madvise(mmap.MADV_HUGEPAGE, skip, n_bytes)
    return whole[skip:skip + n_bytes].view(dtype).reshape(shape)


class CopyOnWrite:
    """Private mappings (MAP_PRIVATE, readable and writable) of a checkpoint's shard files, one
    per shard, made on first use. An array over one shares the page cache's pages with the
    library's read-only mapping until something writes to it; a write then copies that page
    into the process and never reaches the file. So a framework that cannot be told an array is
    read-only (torch.frombuffer/from_numpy warn and let in-place ops write) gets zero-copy
    tensors that cannot fault or change the file. Each array keeps its mapping alive."""

    def __init__(self, paths, sizes):
        self._paths, self._sizes, self._maps = paths, sizes, {}

    def view(self, shard, offset, n_bytes):
        """Bytes [offset, offset + n_bytes) of shard's file as a writable uint8 array, or None
        when the path is no longer the file the library opened (its size differs) or cannot be
        mapped (standard input, a pipe)."""
        m = self._maps.get(shard)
        if m is None:
            try:
                fd = os.open(self._paths[shard], os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                return None
            try:
                if os.fstat(fd).st_size != self._sizes[shard]:
                    return None
                m = mmap.mmap(fd, 0, access=mmap.ACCESS_COPY)
            except (OSError, ValueError):
                return None
            finally:
                os.close(fd)
            self._maps[shard] = m
        return np.frombuffer(m, np.uint8, n_bytes, offset)
