"""Run the multinode.training collection from Python: ``train()`` a job, ``plan()`` one without changing anything.

    import multinode_training as mt
    plan = mt.plan("inventories/sim")
    print(plan.world_size, plan.launch_commands)
    run = mt.train("inventories/sim", on_event=print)
    print(run.status, run.summary["test_accuracy"])

From a shell: ``python -m multinode_training watch`` follows the running job, ``... cancel`` stops it.
"""

from multinode_training.api import Plan, PlanError, Run, cancel, find_collection, plan, train
from multinode_training.records import (
    Failure,
    JobEvent,
    PhaseChanged,
    PlanShown,
    Progress,
    RankEnded,
    RankStarted,
    Record,
    Restarted,
    Stalled,
    Straggler,
)

__all__ = [
    "Failure",
    "JobEvent",
    "PhaseChanged",
    "Plan",
    "PlanError",
    "PlanShown",
    "Progress",
    "RankEnded",
    "RankStarted",
    "Record",
    "Restarted",
    "Run",
    "Stalled",
    "Straggler",
    "cancel",
    "find_collection",
    "plan",
    "train",
]
