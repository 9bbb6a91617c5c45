"""Memory behind the arrays the package hands out: fresh output buffers on transparent huge pages,
and copy-on-write mappings of a file for frameworks that have no read-only arrays (PyTorch)."""

import mmap
import os
import stat

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


class ReadOnly:
    """What a read-only array over memory the package does not own is a view of: numpy keeps it
    as the array's base, and it keeps owner (what the memory belongs to) alive. numpy refuses to
    make such an array writable."""

    __slots__ = ("__array_interface__", "_owner")

    def __init__(self, owner, address, n_bytes):
        self._owner = owner
        self.__array_interface__ = {"version": 3, "shape": (n_bytes,), "typestr": "|u1",
                                    "data": (address, True)}   # True: read-only


class CopyOnWrite:
    """Private mappings (MAP_PRIVATE, readable and writable) of byte ranges of a checkpoint's
    shard files, a new one for every array. One shares the page cache's pages with the
    library's own (PROT_READ) mapping until something writes to it; a write then copies that
    page into the process and never reaches the file, nor any other array. Every zero-copy
    array the package hands out views one of these, not the library's mapping: numpy's are
    flagged read-only, but torch.from_numpy and torch.frombuffer only warn about that and let an
    in-place op (mul_) write, which into a PROT_READ page would kill the process. Each array
    keeps its mapping alive, past close()."""

    def __init__(self, paths, sizes):
        """Made right after tm_open: each shard path's identity (device, inode) now, when it is a
        regular file of the size the library saw, is taken to be the file the library opened;
        a view is made only of that same file later (a path replaced since, even by a file of
        the same size, is not viewed)."""
        self._paths, self._ids = paths, []
        for path, size in zip(paths, sizes):
            try:
                st = os.stat(path)
                ok = stat.S_ISREG(st.st_mode) and st.st_size == size
            except (OSError, ValueError):
                ok = False
            self._ids.append((st.st_dev, st.st_ino, size) if ok else None)

    def view(self, shard, offset, n_bytes, writable):
        """Bytes [offset, offset + n_bytes) of shard's file as a uint8 array, or None when the
        path is no longer the file the library opened or cannot be mapped (standard input, a
        pipe, a URL)."""
        if self._ids[shard] is None:
            return None
        start = offset - offset % mmap.ALLOCATIONGRANULARITY
        try:
            fd = os.open(self._paths[shard], os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino, st.st_size) != self._ids[shard]:
                return None
            m = mmap.mmap(fd, offset + n_bytes - start, access=mmap.ACCESS_COPY, offset=start)
        except (OSError, ValueError):
            return None
        finally:
            os.close(fd)
        whole = np.frombuffer(m, np.uint8)[offset - start:]
        if writable:
            return whole
        return np.asarray(ReadOnly(whole, whole.ctypes.data, n_bytes))
