"""Memory behind the arrays the package hands out: decoded arrays' buffers, reused through a
bounded pool, and copy-on-write mappings of a file for frameworks that have no read-only arrays
(PyTorch)."""

import ctypes
import math
import mmap
import os
import stat
import threading

import numpy as np

HUGE_PAGE = 2 << 20
# Below this an array is numpy's own (malloc keeps and reuses small freed blocks itself, and a
# fresh page costs little next to the call).
POOL_FROM = 4 << 20
# Buffers of at least this size start on a 2 MiB boundary and are advised MADV_HUGEPAGE.
_HUGE_FROM = 8 * HUGE_PAGE
POOL_VARIABLE = "TENSORMAP_POOL_BYTES"


class _Buffer:
    """A private anonymous mapping of capacity bytes (never shared with a child or a file). Its
    pages, once written, stay in the process until the mapping is dropped (munmap, when the last
    reference goes)."""

    __slots__ = ("capacity", "address", "_map")

    def __init__(self, capacity):
        huge = capacity >= _HUGE_FROM and hasattr(mmap, "MADV_HUGEPAGE")
        pad = HUGE_PAGE if huge else 0
        self._map = mmap.mmap(-1, capacity + pad, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        start = ctypes.addressof(ctypes.c_char.from_buffer(self._map))
        skip = -start % HUGE_PAGE if huge else 0
        if huge:
            self._map.madvise(mmap.MADV_HUGEPAGE, skip, capacity)
        self.capacity, self.address = capacity, start + skip


class _Lease:
    """What a pooled array is a view of: numpy keeps it as the array's base (and every view's,
    and torch.from_numpy keeps the array), so it is collected only when nothing uses its memory
    any more; then its buffer goes back to the pool, not before."""

    __slots__ = ("__array_interface__", "_buffer", "_pool")

    def __init__(self, pool, buffer, n_bytes):
        self._pool, self._buffer = pool, buffer
        self.__array_interface__ = {"version": 3, "shape": (n_bytes,), "typestr": "|u1",
                                    "data": (buffer.address, False)}

    def __del__(self):
        self._pool.give(self._buffer)


def size_class(n_bytes):
    """The capacity of the buffer an array of n_bytes gets: n_bytes rounded up to an eighth of
    the power of two below it, so that tensors of nearly the same size share buffers and no
    buffer is more than 12.5% larger than what it holds."""
    step = max(1 << (n_bytes.bit_length() - 4), mmap.PAGESIZE)
    return -(-n_bytes // step) * step


class Pool:
    """Buffers of arrays that are gone, kept for the next arrays of their size class: a decode
    into one writes pages the process already has, where a new mapping's pages would each fault
    in and be zeroed by the kernel first (the cost that made a fresh get_tensor several times
    slower than decoding into a reused buffer). No zeroing on reuse: every decode writes every
    byte of its array. At most cap bytes are held (0: none, every array's buffer is unmapped with
    it); past that the buffers returned longest ago are dropped first."""

    def __init__(self, cap):
        self.cap = cap
        self._free = []      # oldest returned first
        self._held = 0
        self._new_lock()
        # A child forked while another thread held the lock (a DataLoader's workers) would wait
        # for it forever: it gets a lock of its own.
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._new_lock)

    def _new_lock(self):
        # Reentrant: a buffer may come back from a collection that runs inside take or give.
        self._lock = threading.RLock()

    def held(self):
        """Bytes of the buffers in the pool now."""
        return self._held

    def take(self, capacity):
        """A buffer of that capacity, the one returned last (its pages the likeliest in cache),
        or a new one."""
        with self._lock:
            free = self._free
            for i in range(len(free) - 1, -1, -1):
                if free[i].capacity == capacity:
                    self._held -= capacity
                    return free.pop(i)
        return _Buffer(capacity)

    def give(self, buffer):
        dropped = []    # made outside the lock, and unmapped after it (munmap takes time)
        with self._lock:
            if buffer.capacity <= self.cap:
                self._free.append(buffer)
                self._held += buffer.capacity
            while self._held > self.cap:
                self._held -= self._free[0].capacity
                dropped.append(self._free.pop(0))
        del dropped

    def empty(self, shape, dtype):
        """An uninitialised C-contiguous array over a buffer of the pool."""
        n_bytes = math.prod(shape) * dtype.itemsize
        lease = _Lease(self, self.take(size_class(n_bytes)), n_bytes)
        return np.asarray(lease).view(dtype).reshape(shape)


def _pool_cap():
    """TENSORMAP_POOL_BYTES, or an eighth of the machine's memory."""
    text = os.environ.get(POOL_VARIABLE)
    if text is None:
        try:
            return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 8
        except (ValueError, OSError):
            return 1 << 30
    try:
        cap = int(text)
    except ValueError:
        cap = -1
    if cap < 0:
        raise ValueError(f"{POOL_VARIABLE}={text!r}: it is the number of bytes the pool of "
                         "freed output buffers may hold (0 disables the pool)")
    return cap


POOL = Pool(_pool_cap())


def empty(shape, dtype):
    """An uninitialised C-contiguous array for a decode to fill: numpy's own when small, else
    over a buffer of POOL (reused from an array that is gone, or new)."""
    dtype = np.dtype(dtype)
    if math.prod(shape) * dtype.itemsize < POOL_FROM:
        return np.empty(shape, dtype)
    return POOL.empty(shape, dtype)


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
