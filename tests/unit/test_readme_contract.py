# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/SCRIPTS.md's table of the rank environment says what rank_contract.py does."""

from __future__ import annotations

import re
from pathlib import Path

from ansible_collections.multinode.training.plugins.module_utils.launch import REGISTRY
from ansible_collections.multinode.training.plugins.module_utils.rank_contract import CONTRACT

SCRIPTS = Path(__file__).resolve().parents[2] / "docs" / "SCRIPTS.md"
ROW = re.compile(r"^\| `([A-Z_]+)` \| ([^|]+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \|$", re.MULTILINE)


def table() -> dict[str, list[str]]:
    return {match.group(1): [cell.strip() for cell in match.groups()[1:]] for match in ROW.finditer(SCRIPTS.read_text())}


def test_every_contract_variable_is_documented_with_its_meaning():
    rows = table()
    assert [name for name in rows if name in {v.name for v in CONTRACT}] == [v.name for v in CONTRACT]
    for variable in CONTRACT:
        assert rows[variable.name][0] == variable.meaning


def test_the_launcher_columns_name_the_variables_the_wrapper_reads():
    rows = table()
    for variable in CONTRACT:
        torchrun, mpiexec, mpirun = rows[variable.name][1:]
        assert torchrun == "torchrun" and variable.name in REGISTRY["torchrun"].rank_variables
        for launcher, cell in (("mpiexec", mpiexec), ("mpirun", mpirun)):
            source = re.fullmatch(r"from `([A-Z_]+)`", cell)
            if source:
                assert source.group(1) in variable.sources and source.group(1) in REGISTRY[launcher].rank_variables
            else:
                assert variable.fallback is not None, f"{variable.name}: {launcher} sets no source, yet no fallback"
