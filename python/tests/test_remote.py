"""A file on a web server through the Python package: tests/support/http_server.py on 127.0.0.1 serves a
copy of a golden file; what comes back over HTTP must be what ggml decoded, bit for bit."""

import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

import tensormap
from conftest import ROOT, corpus_path, golden_tensors


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("www")
    shutil.copy(corpus_path("golden", "golden-a.gguf"), root / "golden-a.gguf")
    port_file = root / "port"
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "support", "http_server.py"),
                             "--root", str(root), "--port-file", str(port_file)])
    deadline = time.monotonic() + 20
    while not port_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("tests/support/http_server.py did not start (no port file within 20 s)")
        time.sleep(0.02)
    # a proxy from the environment must not see loopback requests
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.lower().endswith("_proxy")}
    yield f"http://127.0.0.1:{port_file.read_text().strip()}"
    os.environ.update(saved)
    proc.terminate()
    proc.wait(10)


def test_every_decodable_tensor_over_http_is_ggml_s(server):
    with open(corpus_path("golden", "golden-a.f32"), "rb") as fp:
        oracle = fp.read()
    decoded = 0
    with tensormap.open(server + "/files/golden-a.gguf") as remote, \
            tensormap.open(corpus_path("golden", "golden-a.gguf")) as local:
        assert remote.keys() == local.keys()
        for row in golden_tensors("golden-a"):
            raw = remote.get_raw(row["name"])
            assert np.array_equal(raw, local.get_raw(row["name"])), row["name"]
            if not tensormap.can_decode(row["type"]):
                continue
            got = remote.get_tensor(row["name"]).reshape(-1)
            want = np.frombuffer(oracle, "<f4", row["n_values"], row["f32_offset"])
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), row["name"]
            decoded += 1
    assert decoded >= 2 * 13


def test_rows_and_matvec_over_http_match_the_local_file(server):
    name = "q4_K.rows.weight"
    with tensormap.open(server + "/files/golden-a.gguf") as remote, \
            tensormap.open(corpus_path("golden", "golden-a.gguf")) as local:
        assert np.array_equal(remote.get_rows(name, 2, 5).view(np.uint32),
                              local.get_rows(name, 2, 5).view(np.uint32))
        x = np.random.default_rng().standard_normal(1024).astype(np.float32)
        for mode in ("f32", "q8"):
            assert np.array_equal(remote.matvec(name, x, mode=mode).view(np.uint32),
                                  local.matvec(name, x, mode=mode).view(np.uint32))


def test_a_missing_url_is_a_file_error_naming_http_404(server):
    with pytest.raises(tensormap.FileError) as e:
        tensormap.open(server + "/files/no-such.gguf")
    assert e.value.code == "NOT_FOUND"
    assert "HTTP 404" in e.value.message


def test_fetched_counts_the_header_then_exactly_a_tensor_s_bytes(server, monkeypatch):
    monkeypatch.setenv("TM_HTTP_CHUNK", "4K")   # the golden header fits; its data does not
    with tensormap.open(corpus_path("golden", "golden-a.gguf")) as local:
        assert local.fetched() == (0, 0)
        name = "q4_K.rows.weight"
        nbytes = local.info(name)["nbytes"]
        start = local.info(name)["file_offset"]
    assert start > 4096
    with tensormap.open(server + "/files/golden-a.gguf") as remote:
        assert remote.fetched() == (4096, 1)
        remote.get_raw(name)
        assert remote.fetched() == (4096 + nbytes, 2)
