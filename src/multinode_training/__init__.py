"""Run the multinode.training collection from Python: ``train()`` a job, ``plan()`` one without changing anything,
``check()`` the cluster's nodes and links.

    import multinode_training as mt
    health = mt.check("inventories/sim")
    print(health.status, health.findings)
    plan = mt.plan("inventories/sim")
    print(plan.world_size, plan.launch_commands)
    run = mt.train("inventories/sim", on_event=print)
    print(run.status, run.summary["test_accuracy"])
    job = mt.submit("inventories/sim", extravars={"launcher_type": "mpiexec"})  # returns at once
    print(job.status())  # queued, provisioning, launching, running, collecting, then how it ended
    for line in job.logs(follow=True):
        print(line)
    print(job.wait().summary["status"], [run.id for run in mt.list_runs("runs")])

From a shell: ``multinode-training run|submit|plan|list|show|logs|watch|cancel`` (also ``python -m
multinode_training``).
"""

from multinode_training.api import (
    CheckError,
    Health,
    Plan,
    PlanError,
    Run,
    RunNotFoundError,
    cancel,
    check,
    find_collection,
    plan,
    train,
)
from multinode_training.jobs import ClusterBusyError, InvalidJobError, Job, JobError, ProvisioningError, list_runs, submit
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
from multinode_training.summary import Summary

__all__ = [
    "CheckError",
    "ClusterBusyError",
    "Failure",
    "Health",
    "InvalidJobError",
    "Job",
    "JobError",
    "JobEvent",
    "PhaseChanged",
    "Plan",
    "PlanError",
    "PlanShown",
    "ProvisioningError",
    "Progress",
    "RankEnded",
    "RankStarted",
    "Record",
    "Restarted",
    "Run",
    "RunNotFoundError",
    "Stalled",
    "Straggler",
    "Summary",
    "cancel",
    "check",
    "find_collection",
    "list_runs",
    "plan",
    "submit",
    "train",
]
