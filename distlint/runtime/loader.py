"""Find a test class in a rank process from its :class:`ClassRef`.

Workers are fresh processes: the class must be importable.  ``__main__`` (a
module run as ``python file.py``) is what multiprocessing re-imported as
``__mp_main__``; a module pytest loaded under a name that is not importable is
loaded again from its file.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import Any, Callable

from .protocol import ClassRef


class ClassNotFound(Exception):
    pass


def module_for(ref: ClassRef) -> ModuleType:
    if ref.module == "__main__":
        module = sys.modules.get("__mp_main__") or sys.modules.get("__main__")
        if module is not None and hasattr(module, ref.qualname.split(".")[0]):
            return module
    module = sys.modules.get(ref.module)
    if module is not None:
        return module
    try:
        return importlib.import_module(ref.module)
    except ImportError as exc:
        if not ref.file:
            raise ClassNotFound(
                f"cannot import {ref.module!r} for {ref.describe()}: {exc}"
            ) from exc
    spec = importlib.util.spec_from_file_location(ref.module, ref.file)
    if spec is None or spec.loader is None:
        raise ClassNotFound(f"cannot load {ref.file!r} for {ref.describe()}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[ref.module] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(ref.module, None)
        raise
    return module


def named_object(ref: ClassRef, module: Callable[[], object], defined: str) -> Any:
    """What ``ref.qualname`` names in the module ``module()`` imports (not imported for a name
    defined inside a function: ``defined`` says where such objects must be)."""
    if "<locals>" in ref.qualname:
        raise ClassNotFound(f"{ref.describe()} is defined inside a function; {defined}")
    obj: Any = module()
    for part in ref.qualname.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ClassNotFound(f"{ref.describe()} not found in module {ref.module!r}") from None
    return obj


def load_class(ref: ClassRef) -> type:
    obj = named_object(
        ref,
        lambda: module_for(ref),
        "worker processes can only run test classes defined at module level",
    )
    if not isinstance(obj, type):
        raise ClassNotFound(f"{ref.describe()} is not a class")
    return obj
