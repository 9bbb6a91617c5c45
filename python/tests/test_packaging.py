"""The package as pip installs it (pyproject.toml, setup.py): `pip install .`, `pip install -e .`
and a wheel from `python3 -m build --wheel`, each into a fresh virtual environment, then imported
by that environment's interpreter from a directory outside the tree, with neither PYTHONPATH nor
TENSORMAP_LIBRARY set: the package and the library must be the ones installed. Offline: pip gets
--no-index and --no-build-isolation, so it uses Debian's setuptools and wheel and fetches nothing.

The build reuses the library the suite runs against (TENSORMAP_BUILD_DIR is the directory of
$TENSORMAP_LIBRARY, which make sets), so make has nothing to compile."""

import hashlib
import json
import os
import subprocess
import sys
import sysconfig
import zipfile

import pytest

from conftest import ROOT, corpus_path, golden_tensors

SONAME = "libtensormap.so.0"
TENSOR = "q4_K.rows.weight"   # a quantized tensor: decoding it goes through the C library

# What the installed interpreter reports: where the package and the library it loaded are, and
# the decoded tensor's digest.
PROBE = f"""
import hashlib, json, sys, tensormap
with tensormap.open(sys.argv[1]) as f:
    digest = hashlib.sha256(f.get_tensor({TENSOR!r}).tobytes()).hexdigest()
print(json.dumps({{"package": tensormap.__file__, "library": tensormap._c.path, "sha": digest}}))
"""


def build_dir():
    lib = os.environ.get("TENSORMAP_LIBRARY")
    if not lib:
        pytest.fail("TENSORMAP_LIBRARY is not set: run the suite with make test")
    return os.path.dirname(lib)


def clean_env(*, preload):
    """The environment without what would make the tree's package or library importable; the
    sanitizer runtime (LD_PRELOAD under make SAN=1) only where the library is loaded, not for
    pip and make."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "TENSORMAP_LIBRARY") and not k.startswith("PIP_")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", TENSORMAP_BUILD_DIR=build_dir())
    if not preload:
        env.pop("LD_PRELOAD", None)
    return env


def run(argv, cwd):
    p = subprocess.run(argv, cwd=cwd, env=clean_env(preload=False), capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, f"{argv} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}"
    return p


def venv(tmp_path, name):
    """A virtual environment seeing Debian's site-packages (numpy, pip, setuptools, wheel);
    pip itself comes from there, so the environment is made without one."""
    where = tmp_path / name
    run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(where)],
        tmp_path)
    return str(where / "bin" / "python")


def pip_install(python, *args, cwd):
    run([python, "-m", "pip", "install", "--no-index", "--no-build-isolation", "--no-deps",
         "--no-cache-dir", *args], cwd)


def probe(python, cwd):
    p = subprocess.run([python, "-c", PROBE, corpus_path("golden", "golden-a.gguf")], cwd=cwd,
                       env=clean_env(preload=True), capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, f"importing the installed package failed:\n{p.stderr}"
    return json.loads(p.stdout)


def golden_digest():
    """ggml's own decoding of TENSOR, from the corpus, not from tensormap."""
    row = next(t for t in golden_tensors("golden-a") if t["name"] == TENSOR)
    with open(corpus_path("golden", "golden-a.f32"), "rb") as fp:
        fp.seek(row["f32_offset"])
        return hashlib.sha256(fp.read(row["n_values"] * 4)).hexdigest()


def site_packages(python):
    out = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"],
                         env=clean_env(preload=False), capture_output=True, text=True, check=True)
    return out.stdout.strip()


def assert_installed(python, cwd):
    """The package and its bundled library come from the environment, and they decode."""
    got = probe(python, cwd)
    pkg = os.path.join(site_packages(python), "tensormap")
    assert got["package"] == os.path.join(pkg, "__init__.py")
    assert got["library"] == os.path.join(pkg, SONAME)
    assert got["sha"] == golden_digest()


def header_version():
    with open(os.path.join(ROOT, "include", "tensormap.h"), encoding="utf-8") as fp:
        line = next(line for line in fp if line.startswith("#define TM_VERSION_STRING"))
    return line.split('"')[1]


def test_pip_install(tmp_path):
    python = venv(tmp_path, "env")
    pip_install(python, ROOT, cwd=tmp_path)
    assert_installed(python, tmp_path)


def test_wheel(tmp_path):
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), ROOT],
        tmp_path)
    wheels = os.listdir(dist)
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    # for any Python 3, for this platform only: it holds a native library
    assert wheels == [f"tensormap-{header_version()}-py3-none-{platform}.whl"], wheels
    with zipfile.ZipFile(dist / wheels[0]) as z:
        names = z.namelist()
    assert f"tensormap/{SONAME}" in names and "tensormap/__init__.py" in names, names
    python = venv(tmp_path, "env")
    pip_install(python, str(dist / wheels[0]), cwd=tmp_path)
    assert_installed(python, tmp_path)


def test_editable_install(tmp_path):
    """`pip install -e .`: the package is the tree's python/tensormap, and it loads the library
    from the tree's build/ (make's default build directory)."""
    tree_lib = os.path.join(ROOT, "build", SONAME)
    if os.path.realpath(build_dir()) != os.path.realpath(os.path.dirname(tree_lib)):
        pytest.skip(f"an editable package loads {tree_lib}, and this run tests {build_dir()} "
                    "(make SAN=1): the plain make test run checks it")
    python = venv(tmp_path, "env")
    pip_install(python, "-e", ROOT, cwd=tmp_path)
    got = probe(python, tmp_path)
    assert got["package"] == os.path.join(ROOT, "python", "tensormap", "__init__.py")
    assert got["library"] == tree_lib
    assert got["sha"] == golden_digest()
