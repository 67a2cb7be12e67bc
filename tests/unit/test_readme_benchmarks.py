# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/BENCHMARKS.md's benchmark sections are the generated results files, never hand-copied numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "docs" / "BENCHMARKS.md"
GENERATED = [
    "benchmarks/results/scale_bench.md",
    "benchmarks/results/iteration_bench.md",
    "benchmarks/results/api_overhead.md",
    "benchmarks/results/restart_bench.md",
    "benchmarks/results/requirements_bench.md",
    "benchmarks/results/health_bench.md",
    "benchmarks/results/submit_bench.md",
]


def embedded(name: str) -> str:
    text = BENCHMARKS.read_text()
    begin, end = f"<!-- BEGIN {name} -->\n", f"<!-- END {name} -->"
    assert begin in text and end in text, f"docs/BENCHMARKS.md has no section for {name}"
    return text.split(begin, 1)[1].split(end, 1)[0]


@pytest.mark.parametrize("name", GENERATED)
def test_readme_holds_the_generated_results(name: str) -> None:
    assert embedded(name) == (ROOT / name).read_text()
