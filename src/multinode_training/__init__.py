"""Run the multinode.training collection from Python: ``train()`` a job, ``plan()`` one without changing anything,
``check()`` the cluster's nodes and links.

    import multinode_training as mt
    health = mt.check("inventories/sim")
    print(health.status, health.findings)
    plan = mt.plan("inventories/sim")
    print(plan.world_size, plan.launch_commands)
    run = mt.train("inventories/sim", on_event=print)
    print(run.status, run.summary["test_accuracy"])

From a shell: ``python -m multinode_training watch`` follows the running job, ``... cancel`` stops it.
"""

from multinode_training.api import (
    CheckError,
    Health,
    Plan,
    PlanError,
    Run,
    cancel,
    check,
    find_collection,
    plan,
    train,
)
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
    "CheckError",
    "Failure",
    "Health",
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
    "check",
    "find_collection",
    "plan",
    "train",
]
