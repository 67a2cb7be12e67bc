#!/usr/bin/env python3
"""Every summary.json the scenario's real runs wrote (and each restarted attempt's) against the run schema.

check_summaries.py RUNS_DIR    prints one JSON line (how many were checked, by status), exits 1 naming each
                               summary that departs from plugins/module_utils/run_schema.py and how
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from jsonschema import Draft202012Validator

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "collections"))
# pylint: disable-next=wrong-import-position
from ansible_collections.multinode.training.plugins.module_utils.run_schema import (
    SUMMARY_FILE,
    SUMMARY_SCHEMA,
)  # noqa: E402


def main(runs_dir: Path) -> int:
    validator = Draft202012Validator(SUMMARY_SCHEMA)
    paths = sorted(path for path in runs_dir.glob(f"*/{SUMMARY_FILE}") if not path.parent.is_symlink())
    paths += sorted(runs_dir.glob(f"*/attempts/*/{SUMMARY_FILE}"))
    statuses: Counter[str] = Counter()
    departures = []
    for path in paths:
        summary = json.loads(path.read_text())
        statuses[str(summary.get("status"))] += 1
        departures += [
            f"{path}: {'/'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}"
            for error in validator.iter_errors(summary)
        ]
    print(json.dumps({"checked": len(paths), "statuses": statuses}))
    for departure in departures:
        print(departure, file=sys.stderr)
    return 1 if departures or not paths else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
