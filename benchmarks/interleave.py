"""Side-by-side timing for the in-process benchmarks: variants interleaved in every repeat.

A shared machine's load changes over seconds; timing variant A ``repeat`` times and then
variant B would let a busy moment hit one of them only. Here each repeat runs every
variant once, in an order rotated from repeat to repeat, and each variant's median is
reported. Times are CPU seconds of this process (``time.process_time``), steadier than
wall time when other jobs share the cores.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Callable, Optional

#: A variant: runs once; may return the CPU seconds of the part that counts (else its whole call counts).
Variant = Callable[[], Optional[float]]


def whole(fn: Callable[[], object]) -> Variant:
    """A variant whose whole call counts, whatever ``fn`` returns."""

    def run() -> None:
        fn()

    return run


def interleaved_medians(variants: dict[str, Variant], repeat: int) -> dict[str, float]:
    """Median CPU seconds per variant, every variant run once per repeat, order rotated."""
    samples: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for index in range(repeat):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.process_time()
            inner = variants[name]()
            samples[name].append(inner if isinstance(inner, float) else time.process_time() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


class MediansTable:
    """Prints per-file rows of median milliseconds, a total row, and one ratio column
    (``numerator / denominator``, e.g. old cost over new): the table the per-file benchmarks share."""

    def __init__(
        self,
        columns: Sequence[str],
        ratio: tuple[str, str, str],
        root: Path,
        width: int = 12,
    ) -> None:
        #: ``ratio``: (its heading, the numerator's column, the denominator's column).
        self.columns, self.ratio, self.root, self.width = columns, ratio, root, width
        self.totals = dict.fromkeys(columns, 0.0)
        self.files = 0

    def header(self) -> None:
        print(
            f"{'file':40} {'KB':>5} "
            + " ".join(f"{c + ' ms':>{self.width}}" for c in self.columns)
            + f" {self.ratio[0]:>{self.width}}"
        )

    def row(self, path: Path, size: int, medians: dict[str, float]) -> None:
        for key, value in medians.items():
            self.totals[key] += value
        self.files += 1
        name = str(path.relative_to(self.root)) if path.is_relative_to(self.root) else str(path)
        print(f"{name[-40:]:40} {size / 1024:5.1f} " + self._cells(medians))

    def total(self) -> None:
        print(f"{'total (' + str(self.files) + ' files)':40} {'':5} " + self._cells(self.totals))

    def _cells(self, medians: dict[str, float]) -> str:
        _, numerator, denominator = self.ratio
        ratio = medians[numerator] / max(medians[denominator], 1e-9)
        return (
            " ".join(f"{medians[c] * 1e3:{self.width}.1f}" for c in self.columns)
            + f" {ratio:{self.width - 1}.2f}x"
        )
