"""Every public callable documents its Parameters and Returns (numpydoc), so the docs cannot rot silently."""

import importlib
import inspect
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
                and "Returns" not in doc):
            missing.append(f"{name}: Returns")
    assert count > 100
    assert not missing, missing
