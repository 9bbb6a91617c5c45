"""Errors as Python code expects them: the standard exception for what went wrong, with errno
set, and still a tensormap.Error carrying the library's code and message."""

import errno
import os

import numpy as np
import pytest

import tensormap
from conftest import corpus_path

GOLDEN = corpus_path("golden", "golden-a.gguf")


def test_a_missing_file_is_file_not_found_with_errno(tmp_path):
    path = str(tmp_path / "absent.gguf")
    for opener in (tensormap.open, lambda p: tensormap.safe_open(p, framework="np")):
        with pytest.raises(FileNotFoundError) as e:
            opener(path)
        err = e.value
        assert isinstance(err, tensormap.FileError) and err.code == "NOT_FOUND"
        assert err.errno == errno.ENOENT and err.filename == path
        assert str(err) == f"{path}: {err.message}"


def test_a_directory_is_is_a_directory_error(tmp_path):
    with pytest.raises(IsADirectoryError) as e:
        tensormap.open(str(tmp_path))
    assert e.value.errno == errno.EISDIR and isinstance(e.value, tensormap.Error)
    assert "directory" in e.value.message


@pytest.mark.skipif(os.geteuid() == 0, reason="running as root, which reads a file of mode 000: "
                    "no PermissionError to provoke")
def test_an_unreadable_file_is_permission_error(tmp_path):
    path = tmp_path / "secret.gguf"
    path.write_bytes(open(GOLDEN, "rb").read())
    path.chmod(0)
    with pytest.raises(PermissionError) as e:
        tensormap.open(str(path))
    assert e.value.errno == errno.EACCES and isinstance(e.value, tensormap.Error)


def test_a_missing_tensor_is_a_key_error_with_the_close_names():
    with tensormap.open(GOLDEN) as f:
        with pytest.raises(KeyError) as e:
            f.get_tensor("q4_k.rows.weight")
        err = e.value
        assert isinstance(err, tensormap.InvalidError) and err.code == "NOT_FOUND"
        assert "did you mean 'q4_K.rows.weight'" in err.message
        with pytest.raises(KeyError):
            f["no.such.tensor"]
        assert np.array_equal(f["q8_0.rows.weight"], f.get_tensor("q8_0.rows.weight"))


def test_matvec_names_the_length_it_needs():
    with tensormap.open(GOLDEN) as f:
        with pytest.raises(ValueError) as e:
            f.matvec("q4_K.rows.weight", np.zeros(100, np.float32))
        assert isinstance(e.value, tensormap.Error)
        assert "x has 100 values where 1024 are needed" in e.value.message
        assert "mode" not in e.value.message
        with pytest.raises(ValueError, match="matvec mode 'q4'"):
            f.matvec("q4_K.rows.weight", np.zeros(1024, np.float32), mode="q4")
        with pytest.raises(ValueError, match=r"shape \(2, 512\)"):
            f.matvec("q4_K.rows.weight", np.zeros((2, 512), np.float32))
