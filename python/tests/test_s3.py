"""An s3:// object through the Python package: tests/support/s3/serve.js (s3rver, which checks
the signature) on 127.0.0.1 holds a copy of a golden file in its private bucket; what comes back
must be the local file's bytes."""

import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request

import numpy as np
import pytest

import tensormap
from conftest import ROOT, corpus_path

S3_DIR = os.path.join(ROOT, "tests", "support", "s3")
AWS_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
            "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
            "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3")


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    node = shutil.which("node")
    if not node:
        pytest.skip("the S3 test server needs node (as root: apt-get install nodejs npm)")
    if not os.path.exists(os.path.join(S3_DIR, "node_modules", "s3rver", "package.json")):
        pytest.skip("s3rver is not installed in tests/support/s3 (scripts/deps.sh test runs npm ci)")
    work = tmp_path_factory.mktemp("s3")
    port_file = work / "port"
    proc = subprocess.Popen([node, os.path.join(S3_DIR, "serve.js"), "--dir", str(work / "data"),
                             "--port-file", str(port_file), "--log", str(work / "log")])
    deadline = time.monotonic() + 20
    while not port_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("tests/support/s3/serve.js did not start (no port file within 20 s)")
        time.sleep(0.02)
    url = f"http://127.0.0.1:{port_file.read_text().strip()}"
    saved = {k: os.environ.pop(k) for k in list(os.environ)
             if k in AWS_VARS or k.lower().endswith("_proxy")}
    yield url
    for k in AWS_VARS:
        os.environ.pop(k, None)
    os.environ.update(saved)
    proc.terminate()
    proc.wait(10)


def test_a_private_s3_object_reads_as_the_local_file(endpoint):
    query = urllib.parse.urlencode({"bucket": "private", "key": "golden-a.gguf",
                                    "path": corpus_path("golden", "golden-a.gguf")})
    with urllib.request.urlopen(f"{endpoint}/_put?{query}") as answer:
        assert answer.read() == b"stored\n"
    os.environ["AWS_ENDPOINT_URL_S3"] = endpoint
    with pytest.raises(tensormap.Error, match="AccessDenied"):  # unsigned: refused
        tensormap.open("s3://private/golden-a.gguf")
    os.environ["AWS_ACCESS_KEY_ID"] = os.environ["AWS_SECRET_ACCESS_KEY"] = "S3RVER"
    with tensormap.open("s3://private/golden-a.gguf") as remote, \
            tensormap.open(corpus_path("golden", "golden-a.gguf")) as local:
        assert remote.keys() == local.keys()
        for name in local.keys():
            assert np.array_equal(remote.get_raw(name), local.get_raw(name)), name
