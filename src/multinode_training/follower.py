"""The follower of a submitted job: ``python -m multinode_training.follower RUN_DIR``, started by ``submit()``,
which writes the job's extra variables (a JSON object, secrets included) to its standard input; without them (an
empty input) it runs with those job.json keeps.

A module of its own, so that running it does not import :mod:`multinode_training.jobs` twice (the package imports
that module; ``-m multinode_training.jobs`` would run a second copy of it as ``__main__``).
"""

import json
import sys
from pathlib import Path

from multinode_training.jobs import follow

if __name__ == "__main__":
    given = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    sys.exit(follow(Path(sys.argv[1]), json.loads(given) if given.strip() else None))
