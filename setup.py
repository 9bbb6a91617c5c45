"""How pip builds the package (pyproject.toml names this file's setuptools as the backend).

The package is pure Python over ctypes, but it needs the C library: building runs the project's
Makefile for build/libtensormap.so.0 and puts a copy beside the modules, where _lib.py looks
first, so a wheel or a `pip install .` carries its own library. An editable install
(`pip install -e .`) copies nothing: its package is python/tensormap itself, which finds the
library in build/ as it does in the source tree.

TENSORMAP_BUILD_DIR (default: build) is the Makefile's build directory (its B) to build in and
take the library from; the tests point it at the build they run against."""

import os
import re
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py
from wheel.bdist_wheel import bdist_wheel

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD_DIR = os.environ.get("TENSORMAP_BUILD_DIR", "build")
SONAME = "libtensormap.so.0"


def version():
    """The library's version, from the header: one number for the C and the Python package."""
    with open(os.path.join(ROOT, "include", "tensormap.h"), encoding="utf-8") as fp:
        return re.search(r'#define TM_VERSION_STRING "([^"]+)"', fp.read()).group(1)


class BuildPyWithLibrary(build_py):
    """build_py, after `make` has built the shared library: a copy goes into the package
    (not for an editable install, whose package is the source tree's)."""

    def run(self):
        jobs = os.cpu_count() or 1
        subprocess.run(["make", f"-j{jobs}", f"B={BUILD_DIR}", "lib"], cwd=ROOT, check=True)
        super().run()
        if not getattr(self, "editable_mode", False):
            target = os.path.join(self.build_lib, "tensormap", SONAME)
            # copyfile follows the symlink build/libtensormap.so.0 -> libtensormap.so.0.1.0
            shutil.copyfile(os.path.join(ROOT, BUILD_DIR, SONAME), target)
            os.chmod(target, 0o755)


class BinaryDistribution(Distribution):
    """The package holds a native library: its files install as platform-specific (platlib, the
    wheel's root), not as pure Python."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """The wheel is for this platform only, but it has no Python extension module, so for any
    Python 3: py3-none-PLATFORM, not cp311-cp311-PLATFORM."""

    def get_tag(self):
        return "py3", "none", super().get_tag()[2]


# setuptools' own build and egg-info directories go inside the Makefile's build directory, not
# into build/lib beside the library's objects or python/tensormap.egg-info in the sources.
SETUPTOOLS_DIR = os.path.join(BUILD_DIR, "python")
os.makedirs(os.path.join(ROOT, SETUPTOOLS_DIR), exist_ok=True)

setup(
    version=version(),
    package_dir={"": "python"},
    packages=["tensormap"],
    distclass=BinaryDistribution,
    cmdclass={"build_py": BuildPyWithLibrary, "bdist_wheel": PlatformWheel},
    options={"build": {"build_base": SETUPTOOLS_DIR}, "egg_info": {"egg_base": SETUPTOOLS_DIR}},
)
