"""Errors: tensormap.Error carrying the library's message, code and byte offset."""

import os

import pytest

import tensormap
from conftest import corpus_path


def test_missing_file_is_a_file_error(tmp_path):
    path = str(tmp_path / "absent.gguf")
    with pytest.raises(tensormap.FileError) as e:
        tensormap.open(path)
    assert isinstance(e.value, OSError) and isinstance(e.value, tensormap.Error)
    assert e.value.code == "NOT_FOUND" and e.value.offset is None and e.value.path == path
    assert "No such file" in e.value.message
    assert str(e.value) == f"{path}: {e.value.message}"


def test_a_directory_is_a_file_error(tmp_path):
    with pytest.raises(tensormap.FileError) as e:
        tensormap.open(str(tmp_path))
    assert e.value.code == "IO" and "directory" in e.value.message


def test_not_a_model_is_invalid(tmp_path):
    path = tmp_path / "text.gguf"
    path.write_bytes(b"hello, this is not a model file at all\n")
    with pytest.raises(tensormap.InvalidError) as e:
        tensormap.open(path)
    assert isinstance(e.value, ValueError)
    assert e.value.code == "NOT_MODEL"


DAMAGED = sorted(os.listdir(corpus_path("damaged")))


@pytest.mark.parametrize("name", DAMAGED)
def test_damaged_files_are_refused_at_the_damage(name):
    """Every invalid UTF-8 sequence of these files was replaced by EF BF BD in transit: nothing
    before the first one is wrong, so the refusal cannot come before it."""
    path = corpus_path("damaged", name)
    with open(path, "rb") as fp:
        data = fp.read()
    damage_at = data.find(b"\xef\xbf\xbd")
    assert damage_at > 0
    with pytest.raises(tensormap.InvalidError) as e:
        tensormap.open(path)
    err = e.value
    assert err.offset is not None and damage_at <= err.offset < len(data), err.message
    assert f"byte {err.offset}" in err.message
    assert "metadata entry " in err.message or "tensor info " in err.message
    assert err.code in ("TRUNCATED", "BAD_VALUE", "LIMIT", "LAYOUT", "DUPLICATE"), err.code
    # the same verdict read into memory
    with pytest.raises(tensormap.InvalidError) as again:
        tensormap.open(path, mmap=False)
    assert (again.value.code, again.value.offset, again.value.message) == \
        (err.code, err.offset, err.message)


def test_damaged_corpus_is_there():
    assert len(DAMAGED) >= 3


def test_unknown_tensor_and_bad_rows():
    with tensormap.open(corpus_path("golden", "golden-a.gguf")) as f:
        for call in (f.get_tensor, f.get_raw, f.info, lambda n: f.get_rows(n, 0, 1)):
            with pytest.raises(tensormap.InvalidError) as e:
                call("no.such.tensor")
            assert e.value.code == "NOT_FOUND" and "'no.such.tensor'" in e.value.message
        assert "no.such.tensor" not in f and "q8_0.rows.weight" in f
        for r0, r1 in ((0, 7), (3, 2), (-1, 1)):
            with pytest.raises(tensormap.InvalidError) as e:
                f.get_rows("q8_0.rows.weight", r0, r1)
            assert e.value.code == "INVALID_ARG" and "6 rows" in e.value.message


def test_calls_on_a_closed_file_raise():
    f = tensormap.open(corpus_path("golden", "golden-a.gguf"))
    f.close()
    f.close()   # a second close does nothing
    assert f.closed
    for call in (f.keys, f.metadata, f.shards, lambda: f.get_tensor("f32.rows.weight")):
        with pytest.raises(tensormap.InvalidError) as e:
            call()
        assert "closed" in e.value.message
