# SPDX-License-Identifier: Apache-2.0
"""Tests of the installed package itself, needing no GPU and no PyTorch: where
it was imported from, its type stubs, the shared libraries its module needs,
and the documentation of encore.method.

tools/python_tests.sh sets ENCORE_EXPECT_SITE (the site-packages folder of the
fresh virtual environment the wheel was installed into) and ENCORE_WHEEL (the
wheel file); without them those checks are skipped."""

import ast
import inspect
import os
import struct
import zipfile
from pathlib import Path

import pytest

import encore
from encore import _encore

PACKAGE = Path(encore.__file__).resolve().parent
REPO = Path(__file__).resolve().parents[2]

# What the module may need at run time: the C and C++ runtimes only. The CUDA
# runtime is linked in (CUDA::cudart_static, which reaches the driver through
# dlopen), spdlog and fmt are compiled in, and PyTorch is reached through Python.
SYSTEM_LIBRARIES = {
    "libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libpthread.so.0", "libdl.so.2",
    "librt.so.1", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1",
}


def test_imported_from_the_installed_package_not_the_source_tree():
    assert not PACKAGE.is_relative_to(REPO / "python"), f"encore imported from the source tree: {PACKAGE}"
    site = os.environ.get("ENCORE_EXPECT_SITE")
    if not site:
        pytest.skip("ENCORE_EXPECT_SITE not set (tools/python_tests.sh sets it)")
    assert PACKAGE.is_relative_to(Path(site).resolve()), f"encore imported from {PACKAGE}, not from {site}"


def test_wheel_holds_the_module_its_stub_and_py_typed():
    wheel = os.environ.get("ENCORE_WHEEL")
    if not wheel:
        pytest.skip("ENCORE_WHEEL not set (tools/python_tests.sh sets it)")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "encore/py.typed" in names
    assert "encore/_encore.pyi" in names
    assert "encore/__init__.py" in names
    assert any(n.startswith("encore/_encore.") and n.endswith(".so") for n in names), sorted(names)


def _stub():
    path = PACKAGE / "_encore.pyi"
    assert path.is_file(), f"no {path}"
    assert (PACKAGE / "py.typed").is_file(), f"no py.typed in {PACKAGE}"
    return ast.parse(path.read_text(), filename=str(path))


def test_stub_names_every_class_and_function_of_the_module():
    tree = _stub()
    stub_classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    stub_functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    classes = {name for name, v in vars(_encore).items() if isinstance(v, type) and not name.startswith("__")}
    functions = {name for name, v in vars(_encore).items()
                 if callable(v) and not isinstance(v, type) and not name.startswith("_")}
    assert classes, "encore._encore defines no classes"
    assert classes <= stub_classes, f"missing from _encore.pyi: {sorted(classes - stub_classes)}"
    assert functions <= stub_functions, f"missing from _encore.pyi: {sorted(functions - stub_functions)}"
    # Each class's public methods too, so a stub of an older build is caught.
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in classes:
            cls = getattr(_encore, node.name)
            members = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
            members |= {n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
            members |= {t.id for n in node.body if isinstance(n, ast.Assign) for t in n.targets
                        if isinstance(t, ast.Name)}
            public = {m for m in vars(cls) if not m.startswith("_")}
            assert public <= members, f"{node.name}: missing from _encore.pyi: {sorted(public - members)}"


def _needed(path: Path) -> list:
    """The DT_NEEDED entries of a 64-bit little-endian ELF file, read from its
    section headers (.dynamic and the string table it links to)."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        pytest.skip(f"{path.name} is not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    SHT_DYNAMIC, DT_NEEDED = 6, 1
    needed = []
    for sh in sections:
        if sh[1] != SHT_DYNAMIC:
            continue
        strtab = sections[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], 16):
            tag, value = struct.unpack_from("<qQ", data, off)
            if tag == DT_NEEDED:
                start = strtab[4] + value
                needed.append(data[start:data.index(b"\0", start)].decode())
            elif tag == 0:
                break
    return needed


def test_module_needs_only_the_c_and_cxx_runtimes():
    module = Path(_encore.__file__)
    needed = _needed(module)
    assert needed, f"{module.name}: no DT_NEEDED entries read"
    others = [n for n in needed if n not in SYSTEM_LIBRARIES]
    assert not others, (f"{module.name} needs {others} beyond the system's C and C++ runtimes: "
                        "libcudart, libcuda, spdlog or fmt would have to be found at run time")


def test_help_of_method_documents_every_argument():
    doc = inspect.getdoc(encore.method) or ""
    for name in inspect.signature(encore.method).parameters:
        assert f"``{name}``" in doc, f"help(encore.method) does not document '{name}'"
