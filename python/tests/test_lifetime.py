"""Arrays viewing the mapping keep it alive: close() with live views is deferred, and a view
outliving close() and the File object reads the file's bytes, never freed memory."""

import gc
import os
import threading
import time

import numpy as np

import tensormap
from conftest import corpus_path

PATH = corpus_path("golden", "golden-a.gguf")


def file_bytes(info):
    with open(PATH, "rb") as fp:
        fp.seek(info["file_offset"])
        return fp.read(info["nbytes"])


def mapped():
    """Whether this process maps the golden file now."""
    real = os.path.realpath(PATH)
    with open("/proc/self/maps") as fp:
        return any(line.rstrip("\n").endswith(" " + real) for line in fp)


def test_close_without_views_unmaps_now():
    gc.collect()
    assert not mapped()
    f = tensormap.open(PATH)
    assert mapped()
    f.get_tensor("q4_K.rows.weight")   # decoded arrays own their memory: they hold nothing
    f.close()
    assert not mapped()


def test_view_outlives_close_and_the_file_object():
    f = tensormap.open(PATH)
    info = f.info("q8_0.raw_blocks")
    raw = f.get_raw("q8_0.raw_blocks")
    tail = raw[100:]          # a view of the view: numpy keeps the chain to the mapping
    f.close()
    del f, raw
    gc.collect()
    assert mapped()           # deferred: tail still views it
    assert tail.tobytes() == file_bytes(info)[100:]
    assert int(np.sum(tail, dtype=np.uint64)) == sum(file_bytes(info)[100:])
    del tail
    gc.collect()
    assert not mapped()       # the last view gone, the mapping goes


def test_view_outlives_a_file_never_closed():
    def leak():
        return tensormap.open(PATH).get_raw("f16.rows.weight"), \
            tensormap.open(PATH).info("f16.rows.weight")
    raw, info = leak()
    gc.collect()
    assert raw.tobytes() == file_bytes(info)
    assert not raw.flags.writeable


def test_close_while_another_thread_decodes():
    """A decode running when close() is called finishes on a live mapping."""
    f = tensormap.open(PATH)
    want = f.get_tensor("q6_K.rows.weight")
    results, stop = [], threading.Event()

    def decode():
        try:
            while not stop.is_set():
                results.append(f.get_tensor("q6_K.rows.weight"))
        except tensormap.InvalidError as e:   # after close(): the call is refused, cleanly
            assert "closed" in e.message

    threads = [threading.Thread(target=decode) for _ in range(2)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while not results and time.monotonic() < deadline:   # close while the threads are busy
        time.sleep(0.001)
    f.close()
    stop.set()
    for t in threads:
        t.join()
    assert results
    assert all(np.array_equal(r.view(np.uint32), want.view(np.uint32)) for r in results)
