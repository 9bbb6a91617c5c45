"""`tensormap hash` (llama-gguf-hash's output) against hashes worked out here, independently of
the tool: the GGUF files are written byte by byte by this test, their tensor bytes hashed with
Python's hashlib and xxhash (python3-xxhash) and the UUID with the uuid module, and the lines
built in llama-gguf-hash's format (`printf("%-8s  %s  %s\\n", kind, hash, name)`). The known
vectors are the published hashes of "" and "abc" (FIPS 180-2, xxHash's own test values)."""

import hashlib
import json
import os
import struct
import subprocess
import sys
import time
import uuid

import pytest
import xxhash

from conftest import ROOT

TOOL = os.environ.get("TM_TOOL") or os.path.join(ROOT, "build", "tensormap")
# llama.cpp's namespace: uuid.uuid5(uuid.NAMESPACE_URL, 'en.wikipedia.org/wiki/Llama.cpp')
LLAMA_NS = uuid.uuid5(uuid.NAMESPACE_URL, "en.wikipedia.org/wiki/Llama.cpp")
F32, F16, I8 = 0, 1, 24
MiB = 1 << 20


# ---- a GGUF writer of its own ---------------------------------------------------------------

def gguf_str(s):
    b = s if isinstance(s, bytes) else s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf(tensors, kv=(), align=32):
    """A GGUF v3 image: kv is (key, type, packed value); tensors (name, type, ne, data)."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for key, vtype, value in kv:
        out += gguf_str(key) + struct.pack("<I", vtype) + value
    offset, body = 0, b""
    for name, ttype, ne, data in tensors:
        out += gguf_str(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne)
        out += struct.pack("<IQ", ttype, offset)
        pad = -len(data) % align
        body += data + b"\0" * pad
        offset += len(data) + pad
    return out + b"\0" * (-len(out) % align) + body


def f32_tensor(name, n, seed):
    return (name, F32, [n], os.urandom(4 * n) if seed is None else bytes(
        (seed * 131 + i * 7) & 0xff for i in range(4 * n)))


def write(path, image):
    with open(path, "wb") as fp:
        fp.write(image)
    return str(path)


# ---- the hashes, worked out here -------------------------------------------------------------

def hex_of(kind, data):
    if kind == "xxh64":
        return xxhash.xxh64(data, seed=0).hexdigest()
    if kind == "uuid":   # RFC 9562 5.5: SHA-1 of namespace + name, version and variant set
        return str(uuid.UUID(bytes=hashlib.sha1(LLAMA_NS.bytes + data).digest()[:16], version=5))
    return hashlib.new(kind, data).hexdigest()


def expected_lines(label, tensors, kinds, per_tensor=True):
    lines = []
    if per_tensor:
        for name, _, _, data in tensors:
            lines += [f"{k:<8}  {hex_of(k, data)}  {label}:{name}" for k in kinds if k != "uuid"]
    whole = b"".join(t[3] for t in tensors)
    lines += [f"{k:<8}  {hex_of(k, whole)}  {label}" for k in kinds]
    return lines


def run(*args, cwd=None):
    r = subprocess.run([TOOL, "hash", *args], capture_output=True, cwd=cwd, timeout=120)
    assert b"Sanitizer" not in r.stderr, r.stderr.decode(errors="replace")
    return r.returncode, r.stdout.decode(), r.stderr.decode()


ALL = ("xxh64", "sha1", "sha256", "uuid")


# ---- known vectors ----------------------------------------------------------------------------

def test_no_tensors_hash_as_the_empty_input(tmp_path):
    path = write(tmp_path / "empty.gguf", gguf([]))
    rc, out, err = run("--all", "--uuid", path)
    assert rc == 0, err
    assert out.splitlines() == [
        f"xxh64     ef46db3751d8e999  {path}",
        f"sha1      da39a3ee5e6b4b0d3255bfef95601890afd80709  {path}",
        f"sha256    e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  {path}",
        f"uuid      {uuid.uuid5(LLAMA_NS, '')}  {path}",
    ]


def test_abc_gives_the_published_vectors(tmp_path):
    path = write(tmp_path / "abc.gguf", gguf([("t", I8, [3], b"abc")]))
    rc, out, err = run("--all", "--uuid", path)
    assert rc == 0, err
    xxh, sha1, sha256 = ("44bc2cf5ad770999", "a9993e364706816aba3e25717850c26c9cd0d89d",
                         "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    assert out.splitlines() == [
        f"xxh64     {xxh}  {path}:t", f"sha1      {sha1}  {path}:t",
        f"sha256    {sha256}  {path}:t",
        f"xxh64     {xxh}  {path}", f"sha1      {sha1}  {path}", f"sha256    {sha256}  {path}",
        f"uuid      {uuid.uuid5(LLAMA_NS, 'abc')}  {path}",
    ]


# ---- a file hashed here ------------------------------------------------------------------------

def mixed_tensors():
    """Odd sizes, every alignment padding, and one tensor past the 16 MiB piece."""
    return [
        ("token_embd.weight", F16, [8, 3], os.urandom(48)),
        f32_tensor("blk.0.attn_norm.weight", 5, None),
        ("blk.0.big", F32, [(17 * MiB + 12) // 4], os.urandom(17 * MiB + 12)),
        ("tiny", I8, [1], b"\x00"),
        f32_tensor("output.weight", 1000, None),
    ]


def test_every_line_agrees_with_hashlib_and_xxhash(tmp_path):
    tensors = mixed_tensors()
    path = write(tmp_path / "m.gguf", gguf(tensors, kv=[("general.name", 8, gguf_str("m"))]))
    rc, out, err = run("--all", "--uuid", path)
    assert rc == 0, err
    assert out.splitlines() == expected_lines(path, tensors, ALL)
    # the default is xxh64 alone; --no-layer keeps only the model's lines
    assert run(path)[1].splitlines() == expected_lines(path, tensors, ["xxh64"])
    assert run("--sha1", "--no-layer", path)[1].splitlines() == \
        expected_lines(path, tensors, ["sha1"], per_tensor=False)


def test_the_header_is_not_hashed(tmp_path):
    tensors = mixed_tensors()[:2]
    a = write(tmp_path / "a.gguf", gguf(tensors))
    b = write(tmp_path / "b.gguf", gguf(tensors, kv=[("general.name", 8, gguf_str("other"))],
                                        align=64))
    assert run("--all", a)[1].replace(a, "F") == run("--all", b)[1].replace(b, "F")


def test_a_name_from_the_file_is_printed_escaped_and_checks_back(tmp_path):
    tensors = [("evil\x1b[2Jname", F32, [2], os.urandom(8))]
    path = write(tmp_path / "e.gguf", gguf(tensors))
    rc, out, err = run("--sha256", path)
    assert rc == 0, err
    assert "\x1b" not in out and "evil\\x1b[2Jname" in out
    manifest = write(tmp_path / "e.manifest", out.encode())
    rc, out, err = run("--check", manifest, path)
    assert rc == 0, out + err
    assert f"{path}:evil\\x1b[2Jname  -  Ok" in out


# ---- a split set ---------------------------------------------------------------------------------

def test_a_split_set_hashes_as_its_merged_file(tmp_path):
    tensors = mixed_tensors()
    merged = write(tmp_path / "merged.gguf", gguf(tensors))
    parts = [tensors[:2], tensors[2:4], tensors[4:]]
    for no, part in enumerate(parts):
        kv = [("split.no", 2, struct.pack("<H", no)), ("split.count", 2, struct.pack("<H", 3)),
              ("split.tensors.count", 5, struct.pack("<i", len(tensors)))]
        write(tmp_path / f"s-{no + 1:05d}-of-00003.gguf", gguf(part, kv=kv))
    first = str(tmp_path / "s-00001-of-00003.gguf")
    rc, out, err = run("--all", "--uuid", first)
    assert rc == 0, err
    assert out.splitlines() == expected_lines(first, tensors, ALL)
    assert out.replace(first, "F") == run("--all", "--uuid", merged)[1].replace(merged, "F")


# ---- --check -------------------------------------------------------------------------------------

def test_check_passes_then_names_the_tensor_whose_byte_changed(tmp_path):
    tensors = mixed_tensors()
    image = bytearray(gguf(tensors))
    path = write(tmp_path / "m.gguf", bytes(image))
    manifest = tmp_path / "m.manifest"
    manifest.write_text("\n".join(expected_lines(path, tensors, ALL)) + "\n")

    rc, out, err = run("--check", str(manifest), path)
    assert rc == 0, out + err
    lines = out.splitlines()
    # the manifest's kinds strongest first; with none asked for, the strongest is checked
    assert lines[0] == f"manifest  {manifest}  sha256  sha1  xxh64  uuid"
    assert lines[1:-2] == [l + "  -  Ok" for l in expected_lines(path, tensors, ["sha256"])]
    assert lines[-2:] == ["", f"Verification results for {manifest} - Success"]
    rc, out, err = run("--check", str(manifest), "--uuid", "--xxh64", path)
    assert rc == 0 and out.count("  -  Ok") == len(tensors) + 2, out + err

    # one byte of output.weight's data changed: its lines and the model's mismatch, no other
    data = tensors[4][3]
    at = bytes(image).rindex(data) + 123
    image[at] ^= 0x01
    write(path, bytes(image))
    rc, out, err = run("--check", str(manifest), "--all", path)
    assert rc == 1, out + err
    bad = [l for l in out.splitlines() if l.endswith("Mismatch")]
    assert [l.split()[0] + " " + l.split()[2] for l in bad] == \
        [f"{k} {path}:output.weight" for k in ("xxh64", "sha1", "sha256")] + \
        [f"{k} {path}" for k in ("xxh64", "sha1", "sha256")]
    assert out.splitlines()[-1] == f"Verification results for {manifest} - Failure"


def test_check_exit_codes_are_llama_gguf_hash_s(tmp_path):
    tensors = mixed_tensors()[:2]
    path = write(tmp_path / "m.gguf", gguf(tensors))
    # no entry names this file (another path): 3
    other = tmp_path / "other.manifest"
    other.write_text("\n".join(expected_lines("elsewhere.gguf", tensors, ALL)) + "\n")
    rc, out, _ = run("--check", str(other), path)
    assert rc == 3 and out.count("Not Found") == 3, out
    assert out.endswith("- Manifest Missing Entry\n")
    # no line of a known kind: 4
    unknown = tmp_path / "unknown.manifest"
    unknown.write_text("md5  0123  m.gguf\n")
    rc, out, err = run("--check", str(unknown), path)
    assert rc == 4 and "no line of a known hash" in err, out + err
    # no manifest: 5
    rc, out, err = run("--check", str(tmp_path / "absent"), path)
    assert rc == 5 and "cannot open manifest" in err, out + err
    # the tensors listed, not the model: they decide
    only = tmp_path / "only.manifest"
    only.write_text(expected_lines(path, tensors, ["sha1"])[0] + "\n")
    rc, out, _ = run("--check", str(only), path)
    assert rc == 0 and out.count("Ok") == 1 and out.count("Not Found") == 2, out
    kind, digest, name = expected_lines(path, tensors, ["sha1"])[0].split()
    only.write_text(f"{kind}  {digest[:-1]}{'0' if digest[-1] != '0' else '1'}  {name}\n")
    rc, out, _ = run("--check", str(only), path)
    assert rc == 1 and "Mismatch" in out, out


# ---- over HTTP --------------------------------------------------------------------------------

@pytest.fixture
def server(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    port_file, log = tmp_path / "port", tmp_path / "log"
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "support", "http_server.py"),
                             "--root", str(root), "--port-file", str(port_file),
                             "--log", str(log)])
    deadline = time.monotonic() + 20
    while not port_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("tests/support/http_server.py did not start (no port file within 20 s)")
        time.sleep(0.02)
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.lower().endswith("_proxy")}
    yield root, f"http://127.0.0.1:{port_file.read_text().strip()}", log
    os.environ.update(saved)
    proc.terminate()
    proc.wait(10)


def test_a_url_hashes_as_the_local_file_in_bounded_pieces(server, monkeypatch):
    root, base, log = server
    big = 40 * MiB
    tensors = [f32_tensor("a", 3, 1), ("big", F32, [big // 4], os.urandom(big)),
               f32_tensor("c", 7, 2)]
    image = gguf(tensors)
    write(root / "m.gguf", image)
    monkeypatch.setenv("TM_HTTP_CHUNK", "4K")
    url = base + "/files/m.gguf"
    rc, out, err = run("--all", "--uuid", url)
    assert rc == 0, err
    assert out.splitlines() == expected_lines(url, tensors, ALL)
    # what went over the wire: the 4 KiB head, then every tensor's bytes at most once (the
    # first tensor is in the head)
    requests = [json.loads(l) for l in log.read_text().splitlines()]
    tensor_reqs = requests[1:]
    assert requests[0]["bytes"] == 4096
    assert sum(r["bytes"] for r in tensor_reqs) <= sum(len(t[3]) for t in tensors)


def test_a_url_is_hashed_within_bounded_memory(server, monkeypatch):
    """The tool's peak resident memory stays well under the 64 MiB tensor it hashes. It is run
    from a small Python process that reports its child's peak: a child of pytest itself would
    count pytest's pages, which a fork shares, as its own."""
    if "asan" in os.environ.get("LD_PRELOAD", ""):
        pytest.skip("under AddressSanitizer the resident memory is the sanitizer's (shadow, "
                    "quarantine), not the tool's: the bound is checked in the plain build")
    root, base, _ = server
    big = 64 * MiB
    with open(root / "big.gguf", "wb") as fp:
        fp.write(gguf([("big", F32, [big // 4], b"")]))  # the header; the data follows
        for _ in range(big // MiB):
            fp.write(os.urandom(MiB))
    monkeypatch.setenv("TM_HTTP_CHUNK", "4K")
    peak = subprocess.run(
        [sys.executable, "-c", "import resource, subprocess, sys; "
         "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)",
         TOOL, "hash", "--sha256", base + "/files/big.gguf"],
        capture_output=True, text=True, timeout=120, check=True).stdout
    assert int(peak) * 1024 < 48 * MiB, f"peak resident memory {peak.strip()} KiB"


def test_a_fetch_that_fails_names_the_tensor_and_its_bytes(server, monkeypatch):
    """The file changes on the server after its header was read (/swap/ serves NAME.swapped from
    the second request on): the hash stops with the tensor's index, name and byte range."""
    root, base, _ = server
    tensors = [f32_tensor("first", 3, 1), ("second", F32, [4096], os.urandom(4 * 4096))]
    write(root / "s.gguf", gguf(tensors))
    write(root / "s.gguf.swapped", gguf(tensors, kv=[("general.name", 8, gguf_str("x"))]))
    monkeypatch.setenv("TM_HTTP_CHUNK", "4K")
    url = base + "/swap/s.gguf"
    rc, out, err = run("--sha256", url)
    assert rc == 1, out + err
    assert f"tensormap: {url}: tensor 1 'second', bytes 0..16384: " in err, err
    assert f"{url}:first" in out and f"{url}:second" not in out, out
