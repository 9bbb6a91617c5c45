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

# ggml's type ids and block geometry (values, bytes) of the types these files hold
TYPES = {"q4_K": (12, 256, 144), "q8_0": (8, 32, 34)}
BLOCK, BLOCK_BYTES = TYPES["q4_K"][1:]


def gguf_header(tensors, alignment=32):
    """The header of a GGUF v3 file with tensors name -> (type id, ne, n_bytes) placed in order
    at multiples of alignment (declared by general.alignment unless 32, the only metadata):
    (header bytes padded, {name: data offset}, data size)."""
    kv = b""
    if alignment != 32:
        key = b"general.alignment"
        kv = struct.pack("<Q", len(key)) + key + struct.pack("<II", 4, alignment)   # u32
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 1 if kv else 0) + kv
    infos, offsets, at = b"", {}, 0
    for name, (type_id, ne, n_bytes) in tensors.items():
        at += -at % alignment
        infos += struct.pack("<Q", len(name)) + name.encode() + struct.pack("<I", len(ne))
        infos += struct.pack(f"<{len(ne)}Q", *ne) + struct.pack("<IQ", type_id, at)
        offsets[name] = at
        at += n_bytes
    header = head + infos
    return header + b"\0" * (-len(header) % alignment), offsets, at


def row_bytes(ne, kind="q4_K"):
    _, block, block_bytes = TYPES[kind]
    return ne[0] // block * block_bytes


def golden_blocks(kind):
    """The golden corpus' blocks of that type (ggml-quantized realistic values), as rows of
    block bytes."""
    import tensormap
    with tensormap.open(corpus_path("golden", "golden-a.gguf")) as f:
        return f.get_raw(kind + ".rows.weight").copy().reshape(-1, TYPES[kind][2])


def write_model(path, shapes, kind="q4_K", sparse=False, alignment=32):
    """A GGUF file of tensors name -> ne (GGUF order: ne[0] is the row) of type kind. sparse:
    the data is a hole (reads as zeros, costs no disk: for a 7B-shaped file); otherwise the
    golden blocks tiled. alignment: where the data section and each tensor start (4096 keeps
    every tensor byte out of the first HTTP request's 4 KiB). Returns {name: (file offset of
    its data, n_bytes)}."""
    type_id, _, block_bytes = TYPES[kind]
    tensors = {n: (type_id, ne, row_bytes(ne, kind) * int(np.prod(ne[1:])))
               for n, ne in shapes.items()}
    header, offsets, size = gguf_header(tensors, alignment)
    with open(path, "wb") as fp:
        fp.write(header)
        if sparse:
            fp.truncate(len(header) + size)
        else:
            blocks = golden_blocks(kind)
            for name, (_, ne, n_bytes) in tensors.items():
                fp.seek(len(header) + offsets[name])
                fp.write(np.resize(blocks, (n_bytes // block_bytes, block_bytes)).tobytes())
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
