"""File.prefetch and safe_open's: a local plan changes no value and says how many bytes it
asked for; a remote plan is fetched ahead, once, and the tensors read after it are what ggml
decoded (the corpus' oracle) without another request; an unknown name plans nothing."""

import time

import numpy as np
import pytest

import tensormap
from conftest import corpus_path, golden_tensors
from test_remote import server   # noqa: F401 (the HTTP server fixture)

GOLDEN = ("golden", "golden-a.gguf")


def oracle_values(row):
    with open(corpus_path("golden", "golden-a.f32"), "rb") as fp:
        fp.seek(row["f32_offset"])
        return np.frombuffer(fp.read(4 * row["n_values"]), "<f4")


def decodable_rows():
    return [r for r in golden_tensors("golden-a") if tensormap.can_decode(r["type"])]


def test_a_local_plan_asks_for_every_byte_and_changes_no_value(monkeypatch):
    rows = decodable_rows()
    with tensormap.open(corpus_path(*GOLDEN)) as f:
        total = sum(f.info(name)["nbytes"] for name in f.keys())
        assert f.prefetch() == 0, "by default the kernel's own readahead is left to it"
        monkeypatch.setenv("TM_PREFETCH_METHOD", "madvise")
        assert f.prefetch() == total
        assert f.prefetch(rows[0]["name"]) == f.info(rows[0]["name"])["nbytes"]
        for row in rows:
            got = f.get_tensor(row["name"]).reshape(-1)
            assert np.array_equal(got.view(np.uint32), oracle_values(row).view(np.uint32))


def test_safe_open_prefetches_too(monkeypatch):
    monkeypatch.setenv("TM_PREFETCH_METHOD", "madvise")
    name = "q8_0.rows.weight"
    with tensormap.safe_open(corpus_path(*GOLDEN), "np") as f:
        assert f.prefetch([name]) > 0
        assert f.get_tensor(name).size > 0


def test_an_unknown_name_plans_nothing():
    with tensormap.open(corpus_path(*GOLDEN)) as f:
        with pytest.raises(tensormap.UnknownNameError):
            f.prefetch(["q8_0.rows.weight", "no.such.tensor"])


def test_a_remote_plan_is_fetched_ahead_and_read_without_another_request(server,  # noqa: F811
                                                                         monkeypatch):
    monkeypatch.setenv("TM_HTTP_CHUNK", "4K")   # the header, not the data
    rows = decodable_rows()
    with tensormap.open(server + "/files/golden-a.gguf") as f:
        head, _ = f.fetched()
        planned = f.prefetch([r["name"] for r in rows])
        assert planned > 0
        deadline = time.monotonic() + 20
        while f.fetched()[0] < head + planned and time.monotonic() < deadline:
            time.sleep(0.01)
        assert f.fetched()[0] == head + planned
        after = f.fetched()
        for row in rows:
            got = f.get_tensor(row["name"]).reshape(-1)
            assert np.array_equal(got.view(np.uint32), oracle_values(row).view(np.uint32)), \
                row["name"]
        assert f.fetched() == after, "the reads asked the server again"
