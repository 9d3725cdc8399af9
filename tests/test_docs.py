"""Every public callable documents its Parameters and Returns (numpydoc), so the docs cannot rot silently."""

import importlib
import inspect
import pathlib
import pkgutil

import bnfisher


def _public_callables():
    seen = set()
    for info in pkgutil.walk_packages(bnfisher.__path__, "bnfisher."):
        if any(part.startswith("_") for part in info.name.split(".")) or info.name == "bnfisher.cli":
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if id(obj) in seen or not callable(obj):
                continue
            seen.add(id(obj))
            yield f"{info.name}.{name}", obj
            if inspect.isclass(obj):
                for attribute, member in vars(obj).items():
                    if attribute.startswith("_") or isinstance(member, property):
                        continue
                    function = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
                    if callable(function):
                        yield f"{info.name}.{name}.{attribute}", function


def test_public_callables_have_parameters_and_returns_sections():
    missing = []
    count = 0
    for name, obj in _public_callables():
        try:
            signature = inspect.signature(obj)
        except (TypeError, ValueError):
            continue
        count += 1
        doc = inspect.getdoc(obj) or ""
        parameters = [p for p in signature.parameters if p not in ("self", "cls")]
        if parameters and "Parameters" not in doc and not (inspect.isclass(obj) and "Attributes" in doc):
            missing.append(f"{name}: Parameters")
        returned = signature.return_annotation
        if (not inspect.isclass(obj) and returned not in (None, "None", inspect.Signature.empty)
                and "Returns" not in doc and "Yields" not in doc):
            missing.append(f"{name}: Returns")
    assert count > 100
    assert not missing, missing


def _faces():
    """``bnfisher`` and every public sub-package's ``__init__``: what the API reference documents."""
    yield bnfisher
    for info in pkgutil.walk_packages(bnfisher.__path__, "bnfisher."):
        private = any(part.startswith("_") for part in info.name.split("."))
        if info.ispkg and not private and info.name != "bnfisher.cli":
            yield importlib.import_module(info.name)
    yield importlib.import_module("bnfisher.exceptions")


def test_every_public_callable_has_an_examples_section():
    """The doctests of these sections run in the fast suite (``--doctest-modules``), so none can go stale."""
    objects = {id(getattr(face, name)): f"{face.__name__}.{name}"
               for face in _faces() for name in face.__all__ if callable(getattr(face, name))}
    missing = [name for key, name in objects.items()
               if ">>> " not in (inspect.getdoc(_by_id(key, objects)) or "").partition("\nExamples\n--------\n")[2]]
    assert len(objects) > 120
    assert not missing, f"public callables without a runnable Examples section: {sorted(missing)}"


def _by_id(key, objects):
    module, _, name = objects[key].rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_every_benchmark_script_is_listed_in_the_benchmarks_readme():
    root = pathlib.Path(__file__).resolve().parent.parent / "benchmarks"
    listed = (root / "README.md").read_text()
    assert sorted(p.name for p in root.glob("*.py") if f"`{p.name}`" not in listed) == []


def test_every_name_a_benchmark_imports_from_the_package_exists():
    """A benchmark is run by hand, so a renamed function breaks it silently (``permutations.py`` imported
    ``_family_tables`` from 2026-11-28 to 2026-11-30, after it became ``family_tables``): every
    ``from bnfisher... import name`` in ``benchmarks/``, at any depth of the script, must name an attribute or a
    submodule that exists."""
    import ast

    root = pathlib.Path(__file__).resolve().parent.parent / "benchmarks"
    missing = []
    for script in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(script.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "bnfisher"):
                continue
            module = importlib.import_module(node.module)
            for alias in node.names:
                if hasattr(module, alias.name):
                    continue
                try:
                    importlib.import_module(f"{node.module}.{alias.name}")
                except ImportError:
                    missing.append(f"{script.name}: from {node.module} import {alias.name}")
    assert missing == []
