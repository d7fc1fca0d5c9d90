"""The continuous-class marker: how the runtime's modules know the base class without importing it.

(The import-cycle check that used to live here covers the whole package now:
tests/test_import_graph.py.)
"""

from __future__ import annotations

import distlint.runtime.continuous
from distlint.runtime import markers


def test_the_continuous_marker_names_exactly_the_runtime_base_class():
    base = distlint.runtime.continuous.MultiProcContinuousTest
    sub = type("Sub", (base,), {})
    assert markers.is_continuous(base) and markers.is_continuous(sub)
    assert markers.is_continuous_base(base) and not markers.is_continuous_base(sub)
    assert markers.CONTINUOUS_ATTR in vars(base)
    assert not markers.is_continuous(type("Plain", (), {}))
