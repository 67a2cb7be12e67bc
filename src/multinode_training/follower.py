"""The follower of a submitted job: ``python -m multinode_training.follower RUN_DIR``, started by ``submit()``.

A module of its own, so that running it does not import :mod:`multinode_training.jobs` twice (the package imports
that module; ``-m multinode_training.jobs`` would run a second copy of it as ``__main__``).
"""

import sys
from pathlib import Path

from multinode_training.jobs import follow

if __name__ == "__main__":
    sys.exit(follow(Path(sys.argv[1])))
