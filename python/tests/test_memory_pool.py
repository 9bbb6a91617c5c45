"""The pool of freed output buffers (python/tensormap/_memory.py): a buffer goes back to it only
when nothing uses its memory any more (the array, a view of it, a memoryview, a torch tensor),
values decoded into a reused buffer are exact, the cap (TENSORMAP_POOL_BYTES) bounds what it
keeps, 0 disables it, and threads decoding at once each get their own memory."""

import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import tensormap
from conftest import ROOT
from model_files import write_model

# Two tensors of 4096 x 512 values (8 MiB of float32, one size class of the pool), of two
# types so that their values differ everywhere.
NE = (4096, 512)
N_BYTES = NE[0] * NE[1] * 4


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("pool")
    paths = {}
    for kind in ("q4_K", "q8_0"):
        paths[kind] = str(d / f"{kind}.gguf")
        write_model(paths[kind], {"w": NE}, kind)
    return paths


@pytest.fixture(scope="module")
def expected(files):
    """Each tensor decoded into an array numpy allocated (out=), never a pooled one."""
    want = {}
    for kind, path in files.items():
        with tensormap.open(path) as f:
            want[kind] = f.get_tensor("w", out=np.empty((NE[1], NE[0]), np.float32))
    assert not np.array_equal(want["q4_K"], want["q8_0"])
    return want


def span(address):
    return address, address + N_BYTES


def overlaps(a, b):
    return a[0] < b[1] and b[0] < a[1]


def torch_tensor(array):
    torch = pytest.importorskip("torch", reason="python3-torch is not installed: the torch "
                                "holder is not checked")
    return torch.from_numpy(array)


HOLDERS = {
    "the array": lambda a: a,
    "a view": lambda a: a[1:, ::2],
    "a reshaped view": lambda a: a.reshape(-1)[7:],
    "a memoryview": memoryview,
    "a torch tensor": torch_tensor,
}


@pytest.mark.parametrize("holder", HOLDERS)
def test_memory_in_use_is_never_handed_out(files, expected, holder):
    with tensormap.open(files["q4_K"]) as fa, tensormap.open(files["q8_0"]) as fb:
        first = fa.get_tensor("w")
        first_span = span(first.ctypes.data)
        kept = HOLDERS[holder](first)
        before = np.array(kept, copy=True)
        del first
        second = fb.get_tensor("w")   # the same size class: only a free buffer may serve it
        assert not overlaps(span(second.ctypes.data), first_span)
        assert np.array_equal(np.asarray(kept), before), "the holder's values changed"
        assert np.array_equal(second, expected["q8_0"])
        # Once nothing uses it, the first buffer is the one handed out next (returned last).
        del second
        del kept, before
        third = fb.get_tensor("w")
        assert span(third.ctypes.data) == first_span
        assert np.array_equal(third, expected["q8_0"])


def test_safe_open_torch_tensor_keeps_its_buffer(files, expected):
    pytest.importorskip("torch", reason="python3-torch is not installed: safe_open(framework="
                        "\"pt\") is not checked")
    with tensormap.safe_open(files["q4_K"], framework="pt") as f, \
            tensormap.open(files["q8_0"]) as fb:
        t = f.get_slice("w")[:]
        t_span = span(t.data_ptr())
        other = fb.get_tensor("w")
        assert not overlaps(span(other.ctypes.data), t_span)
        assert np.array_equal(t.numpy(), expected["q4_K"])


def test_values_are_exact_after_reuse(files, expected):
    with tensormap.open(files["q4_K"]) as fa, tensormap.open(files["q8_0"]) as fb, \
            tensormap.safe_open(files["q8_0"], framework="np") as sb:
        addresses = set()
        for i in range(6):
            kind, got = ("q4_K", fa.get_tensor("w")) if i % 2 else ("q8_0", fb.get_tensor("w"))
            addresses.add(got.ctypes.data)
            assert np.array_equal(got, expected[kind]), f"round {i}, {kind}"
            del got
        rows = sb.get_slice("w")[100:400]
        assert np.array_equal(rows, expected["q8_0"][100:400])
        assert len(addresses) == 1, "each array was to reuse the buffer of the one before"


def test_threads_decoding_at_once_get_their_own_memory(files, expected):
    """Four threads, each decoding 12 arrays and keeping only the last two, so that buffers go
    back and are handed out again across threads: after every decode both arrays a thread
    keeps still hold their own tensor's values (a buffer given to two live arrays would hold
    the values of whichever decoded last)."""
    handles = {kind: tensormap.open(path) for kind, path in files.items()}
    wrong, errors = [], []

    def work(seed):
        try:
            kept = []
            for i in range(12):
                kind = ("q4_K", "q8_0")[(seed + i) % 2]
                kept = kept[-1:] + [(kind, handles[kind].get_tensor("w"))]
                wrong.extend((seed, i, k) for k, a in kept if not np.array_equal(a, expected[k]))
        except Exception as e:   # noqa: BLE001 (reported by the main thread)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for f in handles.values():
        f.close()
    assert not errors
    assert not wrong, "(thread, round, tensor) whose kept array changed"


def test_a_child_forked_while_a_thread_uses_the_pool_can_use_it(files, expected):
    """fork() while another thread is inside the pool (holding its lock): the child's decodes
    must not wait for a thread the child does not have."""
    from tensormap import _memory
    inside, leave = threading.Event(), threading.Event()

    def hold():
        with _memory.POOL._lock:
            inside.set()
            leave.wait()
    holder = threading.Thread(target=hold)
    holder.start()
    inside.wait()
    try:
        pid = os.fork()
        if pid == 0:   # the child: decode, and say by the exit status whether it was right
            try:
                with tensormap.open(files["q8_0"]) as f:
                    os._exit(0 if np.array_equal(f.get_tensor("w"), expected["q8_0"]) else 1)
            finally:
                os._exit(2)
        for _ in range(600):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child still waited for the pool's lock after 60 s")
    finally:
        leave.set()
        holder.join()
    assert os.waitstatus_to_exitcode(status) == 0


# ---- the cap and the variable, in a child process (the variable is read at import) ----------

CHILD = r"""
import json, sys
import tensormap
from tensormap import _memory

def mapped(addresses):
    # how many of these addresses lie in a mapping of the process
    with open("/proc/self/maps") as fp:
        ranges = [[int(x, 16) for x in line.split()[0].split("-")] for line in fp]
    return sum(any(lo <= a < hi for lo, hi in ranges) for a in addresses)

with tensormap.open(sys.argv[1]) as f:
    arrays = [f.get_tensor("w") for _ in range(3)]
    addresses = [a.ctypes.data for a in arrays]
    live = mapped(addresses)
    del arrays
print(json.dumps({"live": live, "after": mapped(addresses), "held": _memory.POOL.held(),
                  "cap": _memory.POOL.cap}))
"""


def child(path, pool_bytes):
    env = dict(os.environ, TENSORMAP_POOL_BYTES=pool_bytes,
               PYTHONPATH=os.path.join(ROOT, "python"))
    return subprocess.run([sys.executable, "-c", CHILD, path], env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("pool_bytes, kept", [(str(N_BYTES + N_BYTES // 2), 1),
                                               (str(3 * N_BYTES), 3), ("0", 0)])
def test_the_cap_bounds_the_buffers_kept(files, pool_bytes, kept):
    """Three arrays of 8 MiB, then none: their buffers stay mapped only as far as the cap
    allows (seen in /proc/self/maps, not only in the pool's own account); 0 keeps none."""
    run = child(files["q4_K"], pool_bytes)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    assert got["cap"] == int(pool_bytes)
    assert got["live"] == 3
    assert got["after"] == kept
    assert got["held"] == kept * N_BYTES


@pytest.mark.parametrize("pool_bytes", ["lots", "-1", "1.5e9", ""])
def test_a_bad_variable_is_a_clear_error(files, pool_bytes):
    run = child(files["q4_K"], pool_bytes)
    assert run.returncode != 0
    assert f"TENSORMAP_POOL_BYTES={pool_bytes!r}" in run.stderr
    assert "0 disables the pool" in run.stderr
