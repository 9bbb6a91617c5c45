"""Model files the safe_open, slicing and distributed tests write: GGUF files of quantized
tensors laid out as a model's (written here byte by byte, not by the library under test), and a
local HTTP server to read them through, whose bytes fetched count what a reader touched."""

import contextlib
import os
import struct
import subprocess
import sys
import time

import numpy as np

from conftest import ROOT, corpus_path

Q4_K = 12                     # ggml's type id; blocks of 256 values in 144 bytes
BLOCK, BLOCK_BYTES = 256, 144


def gguf_header(tensors, alignment=32):
    """The header of a GGUF v3 file with no metadata and tensors name -> (type id, ne, n_bytes)
    placed in order at multiples of alignment: (header bytes padded, {name: data offset}, data
    size)."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 0)
    infos, offsets, at = b"", {}, 0
    for name, (type_id, ne, n_bytes) in tensors.items():
        at += -at % alignment
        infos += struct.pack("<Q", len(name)) + name.encode() + struct.pack("<I", len(ne))
        infos += struct.pack(f"<{len(ne)}Q", *ne) + struct.pack("<IQ", type_id, at)
        offsets[name] = at
        at += n_bytes
    header = head + infos
    return header + b"\0" * (-len(header) % alignment), offsets, at


def q4_k_bytes(ne):
    return ne[0] // BLOCK * BLOCK_BYTES * int(np.prod(ne[1:]))


def golden_q4_k_blocks():
    """The golden corpus' q4_K blocks (ggml-quantized realistic values), as (n, 144) uint8."""
    import tensormap
    with tensormap.open(corpus_path("golden", "golden-a.gguf")) as f:
        return f.get_raw("q4_K.rows.weight").copy().reshape(-1, BLOCK_BYTES)


def write_q4_k_model(path, shapes, sparse=False):
    """A GGUF file of q4_K tensors name -> ne (GGUF order: ne[0] is the row). sparse: the data
    is a hole (reads as zeros, costs no disk: for a 7B-shaped file); otherwise the golden q4_K
    blocks tiled. Returns {name: (file offset of its data, n_bytes)}."""
    tensors = {n: (Q4_K, ne, q4_k_bytes(ne)) for n, ne in shapes.items()}
    header, offsets, size = gguf_header(tensors)
    with open(path, "wb") as fp:
        fp.write(header)
        if sparse:
            fp.truncate(len(header) + size)
        else:
            blocks = golden_q4_k_blocks()
            for name, (_, ne, n_bytes) in tensors.items():
                fp.seek(len(header) + offsets[name])
                fp.write(np.resize(blocks, (n_bytes // BLOCK_BYTES, BLOCK_BYTES)).tobytes())
    return {n: (len(header) + offsets[n], tensors[n][2]) for n in shapes}


def in_a_mapping_of(path, address):
    """Whether address lies in a mapping of the file at path (/proc/self/maps): a view, not a
    copy."""
    real = os.path.realpath(path)
    with open("/proc/self/maps") as fp:
        for line in fp:
            fields = line.split()
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if fields[-1] == real and lo <= address < hi:
                return True
    return False


@contextlib.contextmanager
def http_server(root):
    """tests/support/http_server.py serving root on 127.0.0.1: yields its base URL."""
    port_file = os.path.join(root, ".port")
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "support",
                                                          "http_server.py"),
                             "--root", str(root), "--port-file", port_file])
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.lower().endswith("_proxy")}
    try:
        deadline = time.monotonic() + 20
        while not os.path.exists(port_file):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("tests/support/http_server.py did not start within 20 s")
            time.sleep(0.02)
        with open(port_file) as fp:
            yield f"http://127.0.0.1:{fp.read().strip()}"
    finally:
        os.environ.update(saved)
        proc.terminate()
        proc.wait(10)
