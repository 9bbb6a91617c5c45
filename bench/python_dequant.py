#!/usr/bin/python3
"""bench/python_dequant.py — the Python binding's get_tensor against the C library's own threaded
decode of the same tensor, and against a pure-numpy decoder (what Python GGUF readers do today).

    make && PYTHONPATH=python /usr/bin/python3 bench/python_dequant.py [--mib 256] [--dir /tmp]
        [--repeats 5] [--numpy-mib 32] [--keep] [--hold-arrays]

For q4_K and q8_0: writes a GGUF file (the library's writer, through ctypes) holding one tensor of
at least --mib MiB of quantized input whose blocks are the golden corpus' rows (ggml-quantized
realistic values) tiled; then, after one warm-up each and interleaved (the order reversed on
every repeat) so that the machine's noise falls on all alike, the median and minimum of
--repeats runs of:

  C, preallocated   tm_dequant_tensor (through ctypes, one call) on all online CPUs into one
                    float32 buffer allocated and touched once (the ceiling: the library's
                    decode, nothing else)
  get_tensor(out=)  the binding, decoding into that same buffer         (vs C, preallocated)
  C, fresh buffer   np.empty + tm_dequant_tensor: what any caller who wants a new array pays,
                    C or Python: the kernel maps and zeroes the new pages as they are written
  get_tensor        the binding, returning a new array                  (vs C, preallocated)
  numpy             a pure-numpy decoder (one thread), on the first --numpy-mib MiB only
                    (verified bit for bit against the library on the golden tensor first)
  C, rows           tm_dequant_rows_mt of the second half of the rows (a tensor-parallel rank's
                    part) into a preallocated buffer
  C, rows, fresh    the same into a new np.empty buffer
  get_slice         safe_open(..).get_slice("weight")[a:b], the same rows, a new array
                    (vs C, rows; the target is 1.1x)

Two patterns. By default each output is dropped before the next run, as a loop over a model's
tensors that uses each and lets it go does: get_tensor's and get_slice's new arrays then come from
the package's pool of freed output buffers (python/tensormap/_memory.py), whose pages the process
already has. With --hold-arrays every output of every run is kept until the tensor's runs are
over, so nothing is ever freed and every new array is memory new to the process, in C as in
Python: "C, fresh buffer" is then the comparison, and its excess over "C, preallocated" is what
the kernel charges for new pages (it needs memory for all runs: (repeats + 1) outputs of each
fresh case).

Then, without decoding: safe_open's get_tensor of an F16 tensor of --mib MiB (a view of a
copy-on-write mapping, zero-copy) against numpy.memmap of the same bytes, and against reading
them (np.fromfile): both views cost the same, constant time, whatever the size.

GB/s are of float32 output, 1 GB = 10^9 bytes. "vs C" is time per output byte against the C
case named in brackets, from medians, and "vs pre" the same against "C, preallocated" (a speed
of 0.9 of it is a "vs pre" of 1.11); "paired" the median over repeats of each run against its C
case's run in the same repeat (they run next to each other).
"""

import argparse
import ctypes
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

import tensormap
from tensormap import _lib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(ROOT, "..", "shared", "corpus", "golden", "golden-a.gguf")
c = tensormap._c

# ---- pure-numpy decoders, written as a Python reader would (ggml's dequantize_row_*) ----------


def q8_0_numpy(raw):
    """q8_0: 34-byte blocks, f16 scale d then 32 int8: y = d * q."""
    blocks = raw.reshape(-1, 34)
    d = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    q = blocks[:, 2:].view(np.int8).astype(np.float32)
    return (d * q).reshape(-1)


def q4_K_numpy(raw):
    """q4_K: 144-byte blocks of 256: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins for 8
    sub-blocks of 32, 128 bytes of nibbles (each 32 bytes: low nibbles for one sub-block, high
    nibbles for the next). y = d*sc * q - dmin*m."""
    blocks = raw.reshape(-1, 144)
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
    dmin = blocks[:, 2:4].copy().view(np.float16).astype(np.float32)
    s = blocks[:, 4:16]
    sc = np.empty((len(blocks), 8), np.uint8)
    m = np.empty((len(blocks), 8), np.uint8)
    sc[:, :4], m[:, :4] = s[:, 0:4] & 63, s[:, 4:8] & 63
    sc[:, 4:] = (s[:, 8:12] & 0xF) | ((s[:, 0:4] >> 6) << 4)
    m[:, 4:] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    qs = blocks[:, 16:].reshape(-1, 4, 32)
    q = np.stack([qs & 0xF, qs >> 4], axis=2).reshape(-1, 8, 32).astype(np.float32)
    scale = (d * sc.astype(np.float32))[:, :, None]
    shift = (dmin * m.astype(np.float32))[:, :, None]
    return (scale * q - shift).reshape(-1)


NUMPY = {"q8_0": q8_0_numpy, "q4_K": q4_K_numpy}

# ---- the test file --------------------------------------------------------------------------


def check(status, err):
    if status != 0:
        sys.exit("bench: " + err.message.decode())


def write_tensor_file(path, type_name, golden_raw, min_bytes):
    """A GGUF file with one 2-d tensor of type_name whose rows are golden_raw's blocks tiled."""
    type_id = tensormap._TYPE_IDS[type_name]
    block_elems = 256 if type_name == "q4_K" else 32
    block_bytes = golden_raw.nbytes // (golden_raw.nbytes // (144 if type_name == "q4_K" else 34))
    row = 4096                                   # elements per row, a 7B model's width
    row_bytes = row // block_elems * block_bytes
    rows = -(-min_bytes // row_bytes)
    blocks = np.resize(golden_raw.reshape(-1, block_bytes), (rows * row // block_elems,
                                                             block_bytes))
    sig = {"tm_writer_new": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p],
           "tm_writer_tensor": [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint32,
                                ctypes.POINTER(ctypes.c_uint64), ctypes.c_void_p, ctypes.c_void_p],
           "tm_writer_finish": [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]}
    for name, argtypes in sig.items():
        getattr(c, name).argtypes, getattr(c, name).restype = argtypes, ctypes.c_int
    err, w = _lib.Error(), ctypes.c_void_p()
    check(c.tm_writer_new(ctypes.byref(w), ctypes.byref(err)), err)
    ne = (ctypes.c_uint64 * 2)(row, rows)
    check(c.tm_writer_tensor(w, b"weight", type_id, 2, ne, blocks.ctypes.data, ctypes.byref(err)),
          err)
    check(c.tm_writer_finish(w, path.encode(), ctypes.byref(err)), err)


# ---- timing ---------------------------------------------------------------------------------


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def thp(setting):
    """The transparent huge page setting in force ("madvise", ...)."""
    try:
        with open(f"/sys/kernel/mm/transparent_hugepage/{setting}") as fp:
            text = fp.read()
    except OSError:
        return "unknown"
    return text[text.find("[") + 1:text.find("]")]


def cpu_model():
    with open("/proc/cpuinfo") as fp:
        for line in fp:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", type=int, default=256, help="quantized input per tensor (MiB)")
    ap.add_argument("--numpy-mib", type=int, default=32, help="input the numpy decoder runs on")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dir", default="/tmp", help="where the test files are written")
    ap.add_argument("--keep", action="store_true", help="keep the test files")
    ap.add_argument("--hold-arrays", action="store_true",
                    help="keep every output until the tensor's runs end (nothing is freed, so "
                         "nothing is reused)")
    ap.add_argument("--types", default="q4_K,q8_0")
    ap.add_argument("--cases", default="all",
                    help="comma-separated subset: prealloc (C + get_tensor(out=)), fresh "
                         "(C + get_tensor), numpy, slice (C rows + get_slice), zerocopy "
                         "(safe_open against numpy.memmap)")
    args = ap.parse_args()
    if args.hold_arrays:   # and so that not even a warm-up's or another type's buffer is reused
        tensormap._memory.POOL.cap = 0

    cc = subprocess.run(["cc", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    print(f"CPU {cpu_model()}, {os.cpu_count()} online CPUs; library {tensormap.__version__} "
          f"({c.path}), path {tensormap.isa()}; built with {cc} (Makefile flags: -O2, "
          f"per-file ISA flags); Python {platform.python_version()}, numpy {np.__version__}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average "
          f"{os.getloadavg()[0]:.2f}; transparent huge pages {thp('enabled')}, defrag "
          f"{thp('defrag')}; pool cap {tensormap._memory.POOL.cap / 2**20:.0f} MiB; "
          f"{'every output held' if args.hold_arrays else 'each output dropped'}")
    print(f"{'type':6} {'input MiB':>9} {'output MiB':>10}  {'what':17} {'median s':>9} "
          f"{'min s':>7} {'GB/s':>6} {'vs C':>6} {'vs pre':>6} {'paired':>7}")
    sys.stdout.flush()
    with tensormap.open(GOLDEN) as golden:
        for type_name in args.types.split(","):
            name = type_name + ".rows.weight"
            # the numpy decoder must agree with the library before its time means anything
            mine = NUMPY[type_name](golden.get_raw(name))
            want = golden.get_tensor(name).reshape(-1)
            assert np.array_equal(mine.view(np.uint32), want.view(np.uint32)), \
                f"numpy {type_name} decoder differs from the library"
            call_overhead(golden, name)
            path = os.path.join(args.dir, f"tensormap-bench-{type_name}-{os.getpid()}.gguf")
            write_tensor_file(path, type_name, golden.get_raw(name).copy(), args.mib << 20)
            try:
                run(path, type_name, args)
            finally:
                if not args.keep:
                    os.unlink(path)
    if args.cases == "all" or "zerocopy" in args.cases.split(","):
        zero_copy(args)


def call_overhead(f, name):
    """What the binding adds per call, on a small tensor where the decode itself is short: the
    best of 7 batches of 2000 calls each, get_tensor(out=) and get_slice(name)[:] (a new array,
    index maths included) against the bare ctypes call (tm_dequant_tensor, on all online
    CPUs)."""
    _, t = f._tensor(name)
    out, err = f.get_tensor(name), _lib.Error()
    sf = tensormap.safe_open(f.path, framework="np")
    calls = {"bare": lambda: c.tm_dequant_tensor(t, out.ctypes.data, 0, ctypes.byref(err)),
             "get_tensor(out=)": lambda: f.get_tensor(name, out=out),
             "get_slice[:]": lambda: sf.get_slice(name)[:]}
    best = {}
    for k, fn in calls.items():
        samples = []
        for _ in range(7):
            t0 = time.perf_counter()
            for _ in range(2000):
                fn()
            samples.append((time.perf_counter() - t0) / 2000)
        best[k] = min(samples) * 1e6
    sf.close()
    print(f"{name} ({out.size} values): per call {best['bare']:.1f} us bare (ctypes "
          f"tm_dequant_tensor); the binding adds {best['get_tensor(out=)'] - best['bare']:.1f} us "
          f"in get_tensor(out=), {best['get_slice[:]'] - best['bare']:.1f} us in get_slice[:]",
          flush=True)


def run(path, type_name, args):
    with tensormap.open(path) as f:
        info = f.info("weight")
        _, t = f._tensor("weight")
        n = t.contents.n_elements
        err = _lib.Error()

        def c_into(buf):
            check(c.tm_dequant_tensor(t, buf.ctypes.data, 0, ctypes.byref(err)), err)
            return buf

        prealloc = np.ones(info["shape"], np.float32)     # touched: its pages exist
        raw = f.get_raw("weight")
        numpy_bytes = min(raw.nbytes, args.numpy_mib << 20)
        numpy_bytes -= numpy_bytes % (144 if type_name == "q4_K" else 34)
        fresh = lambda: np.empty(info["shape"], np.float32)   # noqa: E731
        rows = info["shape"][0]
        half = np.ones((rows - rows // 2, info["shape"][1]), np.float32)
        sig = [ctypes.POINTER(_lib.Tensor), ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p,
               ctypes.c_uint, ctypes.c_void_p]
        c.tm_dequant_rows_mt.argtypes, c.tm_dequant_rows_mt.restype = sig, ctypes.c_int

        def c_rows(buf):
            check(c.tm_dequant_rows_mt(t, rows // 2, rows, buf.ctypes.data, 0,
                                       ctypes.byref(err)), err)
            return buf
        sf = tensormap.safe_open(path, framework="np")
        # name -> (call, the C case it is compared with)
        cases = {
            "C, preallocated": (lambda: c_into(prealloc), "C, preallocated"),
            "get_tensor(out=)": (lambda: f.get_tensor("weight", out=prealloc), "C, preallocated"),
            "C, fresh buffer": (lambda: c_into(fresh()), "C, fresh buffer"),
            "get_tensor": (lambda: f.get_tensor("weight"),
                           "C, fresh buffer" if args.hold_arrays else "C, preallocated"),
            "numpy": (lambda: NUMPY[type_name](raw[:numpy_bytes]), "C, preallocated"),
            "C, rows": (lambda: c_rows(half), "C, rows"),
            "C, rows, fresh": (lambda: c_rows(np.empty_like(half)), "C, rows, fresh"),
            "get_slice": (lambda: sf.get_slice("weight")[rows // 2:],
                          "C, rows, fresh" if args.hold_arrays else "C, rows"),
        }
        groups = {"prealloc": ("C, preallocated", "get_tensor(out=)"),
                  "fresh": ("C, fresh buffer", "get_tensor"), "numpy": ("numpy",),
                  "slice": ("C, rows", "C, rows, fresh", "get_slice")}
        if args.cases != "all":
            wanted = {k for g in args.cases.split(",") if g in groups for k in groups[g]} | \
                {"C, preallocated"}
            cases = {k: v for k, v in cases.items() if k in wanted}
        out_bytes = {k: n * 4 for k in cases}
        for k in ("C, rows", "C, rows, fresh", "get_slice"):
            out_bytes[k] = half.size * 4
        out_bytes["numpy"] = numpy_bytes // (144 if type_name == "q4_K" else 34) * \
            (256 if type_name == "q4_K" else 32) * 4
        times = {k: [] for k in cases}
        ref = c_into(np.empty(info["shape"], np.float32)).reshape(-1)
        for k, (fn, _) in cases.items():                  # warm-up, and the outputs agree
            _, out = timed(fn)
            got = out.reshape(-1)
            want = ref[-got.size:] if k.startswith("C, rows") or k == "get_slice" \
                else ref[:got.size]
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), k
            del out, got
        del ref
        order = list(cases)
        held = []
        for _ in range(args.repeats):
            order.reverse()       # no case always runs first after a large free, or after numpy
            for k in order:
                fn = cases[k][0]
                dt, out = timed(fn)
                if args.hold_arrays and k not in ("C, preallocated", "get_tensor(out=)",
                                                  "C, rows"):
                    held.append(out)
                del out
                times[k].append(dt)
        del held

        def per_byte(k):
            return statistics.median(times[k]) / out_bytes[k]
        for k, ts in times.items():
            med, base = statistics.median(ts), cases[k][1]
            ratio = per_byte(k) / per_byte(base)
            vs_pre = per_byte(k) / per_byte("C, preallocated")
            # each repeat's run against its C case's run of the same repeat (adjacent in time:
            # slow drifts of the machine's load cancel), then the median of those ratios
            paired = statistics.median((t / out_bytes[k]) / (b / out_bytes[base])
                                       for t, b in zip(ts, times[base]))
            print(f"{type_name:6} {info['nbytes'] / 2**20 if k != 'numpy' else numpy_bytes / 2**20:9.0f} "
                  f"{out_bytes[k] / 2**20:10.0f}  {k:17} {med:9.3f} {min(ts):7.3f} "
                  f"{out_bytes[k] / med / 1e9:6.2f} {ratio:5.2f}x {vs_pre:5.2f}x {paired:6.2f}x",
                  flush=True)
        if "C, fresh buffer" in times:
            page_cost = (per_byte("C, fresh buffer") - per_byte("C, preallocated")) * 2**30
            print(f"{type_name:6} new pages cost {page_cost * 1e3:.0f} ms per GiB of output "
                  f"(C, fresh buffer less C, preallocated)", flush=True)
        sf.close()


def zero_copy(args):
    """safe_open's get_tensor of an F16 tensor against numpy.memmap of the same bytes and
    np.fromfile: microseconds for the views, the size for the read."""
    path = os.path.join(args.dir, f"tensormap-bench-f16-{os.getpid()}.safetensors")
    n = (args.mib << 20) // 2
    header = json.dumps({"w": {"dtype": "F16", "shape": [n // 4096, 4096],
                               "data_offsets": [0, n * 2]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as fp:
        fp.write(len(header).to_bytes(8, "little") + header)
        fp.truncate(8 + len(header) + n * 2)
    start = 8 + len(header)
    try:
        with tensormap.safe_open(path, framework="np") as f:
            cases = {"safe_open get_tensor": lambda: f.get_tensor("w"),
                     "numpy.memmap": lambda: np.memmap(path, np.float16, "r", start,
                                                       (n // 4096, 4096)),
                     "np.fromfile (a read)": lambda: np.fromfile(path, np.float16, n,
                                                                 offset=start)}
            for k, fn in cases.items():
                ts = [timed(fn)[0] for _ in range(args.repeats)]
                print(f"f16    {n * 2 / 2**20:9.0f} {n * 2 / 2**20:10.0f}  {k:21} "
                      f"{statistics.median(ts) * 1e6:9.1f} us (median), "
                      f"{min(ts) * 1e6:.1f} us (min)", flush=True)
    finally:
        if not args.keep:
            os.unlink(path)


if __name__ == "__main__":
    main()
