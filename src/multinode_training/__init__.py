"""Run the multinode.training collection from Python: ``train()`` a job, ``plan()`` one without changing anything.

    import multinode_training as mt
    plan = mt.plan("inventories/sim")
    print(plan.world_size, plan.launch_commands)
    run = mt.train("inventories/sim", on_event=print)
    print(run.status, run.summary["test_accuracy"])
"""

from multinode_training.api import Plan, PlanError, Run, find_collection, plan, train
from multinode_training.records import Failure, PhaseChanged, PlanShown, Record

__all__ = ["Failure", "PhaseChanged", "Plan", "PlanError", "PlanShown", "Record", "Run", "find_collection", "plan", "train"]
