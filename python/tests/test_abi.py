"""The ctypes declarations (python/tensormap/_lib.py) against include/tensormap.h: a C program,
generated from the declarations and compiled here, prints every struct's size and every field's
offset and size as the C compiler lays them out; each must equal what ctypes computes."""

import ctypes
import os
import shutil
import subprocess

import tensormap
from tensormap import _lib
from conftest import ROOT

ENUMS = ("tm_status", "tm_type", "tm_vtype", "tm_format")
CONSTANTS = {"TM_ERROR_MESSAGE_MAX": _lib.ERROR_MESSAGE_MAX, "TM_NO_OFFSET": _lib.NO_OFFSET,
             "TM_MAX_DIMS": _lib.MAX_DIMS, "TM_OPEN_NO_MMAP": tensormap.OPEN_NO_MMAP,
             "TM_OPEN_ALL_SHARDS": tensormap.OPEN_ALL_SHARDS,
             "TM_PREFETCH_TO_END": _lib.PREFETCH_TO_END}


def c_program():
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "tensormap.h"',
             "int main(void) {"]
    for struct, cname in _lib.C_NAMES.items():
        lines.append(f'printf("{cname} %zu\\n", sizeof({cname}));')
        for field, _ in struct._fields_:
            cfield = _lib.C_FIELD.get(field, field)
            lines.append(f'printf("{cname}.{field} %zu %zu\\n", offsetof({cname}, {cfield}), '
                         f'sizeof((({cname} *)0)->{cfield}));')
    for enum in ENUMS:
        lines.append(f'printf("{enum} %zu\\n", sizeof({enum}));')
    for name in CONSTANTS:
        lines.append(f'printf("{name} %llu\\n", (unsigned long long)({name}));')
    lines += ["return 0;", "}"]
    return "\n".join(lines) + "\n"


def c_layout(tmp_path):
    cc = os.environ.get("CC") or "cc"
    assert shutil.which(cc), f"no C compiler ({cc}) to check the struct layouts with"
    src, exe = tmp_path / "layout.c", tmp_path / "layout"
    src.write_text(c_program())
    subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-I", os.path.join(ROOT, "include"),
                    "-o", str(exe), str(src)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    return {k: [int(x) for x in v] for k, *v in (line.split() for line in out.splitlines())}


def python_layout():
    layout = {}
    for struct, cname in _lib.C_NAMES.items():
        layout[cname] = [ctypes.sizeof(struct)]
        for field, ftype in struct._fields_:
            layout[f"{cname}.{field}"] = [getattr(struct, field).offset, ctypes.sizeof(ftype)]
    for enum in ENUMS:
        layout[enum] = [ctypes.sizeof(_lib.c_enum)]
    for name, value in CONSTANTS.items():
        layout[name] = [value]
    return layout


def test_ctypes_layouts_match_the_header(tmp_path):
    c, py = c_layout(tmp_path), python_layout()
    assert c.keys() == py.keys()
    assert {k: v for k, v in py.items() if c[k] != v} == {}, \
        {k: (c[k], py[k]) for k in c if c[k] != py[k]}

