# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Whether a run's ranks formed one world: the verdict on the ranks' world records.

Every Python rank records, through the rank exit guard (rank_exit_guard.py), each process group it initialized
(backend, world size: torch.distributed's, Horovod's ``hvd.init()``, MPI's ``COMM_WORLD`` through mpi4py) and, at its
end, whether it imported torch and which frameworks that form a world their own way (TensorFlow, Horovod, MPI, JAX)
it imported. A job whose ranks all exited 0 may still have trained each node
alone: a trainer whose node count defaults to one gives every node a world of its own ranks, or none at all.

The world formed when every rank initialized a group of the job's world size; or when the processes the ranks
started (``spawned``: one process per node spawning its workers, as pytorch/examples' ImageNet script does) formed
one world together: each rank started a member of it, and its members' group ranks are each of its ranks once. It
did not when no rank did and the ranks are torch ranks that ended (they imported torch, no other framework): that
is judged, and named with its likely cause; so are groups of another size than the job's (an MPI world of one
rank each: mpi4py or Horovod loaded another MPI library than the launcher's) and processes the ranks started that
formed separate worlds (each node's on its own, say). Ranks that form their world in a way the guard does not record
(TensorFlow's own strategies, JAX), ranks that left no record (not Python) and ranks that did not end are not
judged.

Pure Python (no Ansible imports) so it can be unit tested on its own.
"""

from __future__ import annotations

from typing import Any, Mapping

from ansible_collections.multinode.training.plugins.module_utils.rank_exit_guard import SCRIPT_ENDED

WORLD_RECORD_GLOB = "world-rank-*.json"
SPAWNED_WORLD_RECORD_GLOB = "spawned-world-rank-*.json"  # rank_exit_guard.SPAWNED_WORLD_RECORD
# launcher_world_check: what a run whose ranks did not form one world is.
WORLD_CHECKS = ("fail", "warn", "off")
WORLD = "world"  # the root cause kind of such a run (never restarted: the same script would do the same again)
# Of the frameworks a rank's record names (rank_exit_guard.OTHER_WORLDS), those whose worlds the guard records.
RECORDED_WORLDS = ("horovod", "mpi4py")

_LIKELY_CAUSE = (
    "a framework's node count may default to 1 (a trainer that ignores WORLD_SIZE unless told the number of nodes):"
    " give it the job's node count, or initialize torch.distributed from the environment the job gives"
)


# Why the ranks' worlds of one backend (mpi4py's MPI, Horovod) were smaller than the job's.
_MPI_CAUSES = {
    "mpi": (
        "each rank's MPI world held {held}: the MPI library the script loaded{library} may not be the launcher's"
        " (an mpi4py built against another MPI than the one whose mpiexec started the ranks), or the script ran"
        " without an MPI launcher; use the launcher of the library it loads, or point mpi4py at the launcher's library"
        " (MPI4PY_LIBMPI)"
    ),
    "horovod": (
        "each rank's Horovod world held {held}: Horovod was started without its launcher, or under another MPI's"
        " mpiexec than the one it was built against; run it with launcher_type horovodrun"
    ),
}


def _groups(record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [group for group in record.get("groups") or [] if isinstance(group, Mapping)]


def _group_sizes(record: Mapping[str, Any]) -> list[int]:
    return [int(group["world_size"]) for group in _groups(record)]


def verdict(
    records: Mapping[int, Mapping[str, Any]],
    world_size: int,
    spawned: Mapping[int, list[Mapping[str, Any]]] | None = None,
) -> dict[str, Any]:
    """``{"formed": True | False | None, "text": ..., "group_sizes": {rank: [sizes]}}`` for a run of ``world_size``
    ranks from its ranks' world records (rank -> record) and the records of the processes they started (rank ->
    records); ``formed`` is None where nothing is judged. ``spawned_worlds`` (size -> how many processes) when those
    processes initialized groups."""
    sizes = {rank: _group_sizes(record) for rank, record in sorted(records.items())}
    shown: dict[str, Any] = {"group_sizes": {str(rank): found for rank, found in sizes.items()}}
    joined = [rank for rank, found in sizes.items() if world_size in found]
    if len(joined) == world_size:
        return {"formed": True, "text": None, **shown}
    members = _spawned_members(spawned or {})
    if members:
        shown["spawned_worlds"] = {str(size): len(joined_by) for size, joined_by in sorted(members.items())}
        if any(_one_world(size, joined_by, world_size) for size, joined_by in members.items()):
            return {"formed": True, "text": None, **shown}
        text: str | None = _separate_worlds(members, world_size)
    else:
        text = _not_formed(records, sizes, world_size)
    return {"formed": False if text else None, "text": text, **shown}


def _spawned_members(spawned: Mapping[int, list[Mapping[str, Any]]]) -> dict[int, list[tuple[int, int]]]:
    """Group size -> (the job's rank that started it, its group rank) of each started process that initialized a
    group of that size (each process once per size, however often it initialized one)."""
    members: dict[int, list[tuple[int, int]]] = {}
    for job_rank, records in spawned.items():
        for record in records:
            groups = {
                (int(group["world_size"]), int(group["rank"]))
                for group in record.get("groups") or []
                if isinstance(group, Mapping)
            }
            for size, group_rank in groups:
                members.setdefault(size, []).append((job_rank, group_rank))
    return members


def _one_world(size: int, joined_by: list[tuple[int, int]], world_size: int) -> bool:
    """Whether the started processes in groups of ``size`` formed one world spanning the job: their group ranks are
    each of its ranks once, and every one of the job's ranks started a member."""
    return sorted(group_rank for _job_rank, group_rank in joined_by) == list(range(size)) and len(
        {job_rank for job_rank, _group_rank in joined_by}
    ) == world_size


def _separate_worlds(members: Mapping[int, list[tuple[int, int]]], world_size: int) -> str:
    """What the started processes formed instead of one world spanning the job's ranks."""
    shown = ", ".join(
        f"{max(1, round(len(joined_by) / size))} of {size} ranks" for size, joined_by in sorted(members.items())
    )
    return (
        f"the processes the ranks started formed separate groups ({shown}), not one world spanning the job's"
        f" {world_size} ranks: each node's processes may have met on their own (a localhost address), or {_LIKELY_CAUSE}"
    )


def _not_formed(records: Mapping[int, Mapping[str, Any]], sizes: Mapping[int, list[int]], world_size: int) -> str | None:
    """Why the ranks did not form one world, or None when that cannot be judged from their records."""
    if any(set(record.get("other_worlds") or []) - set(RECORDED_WORLDS) for record in records.values()):
        return None
    other_sizes = sorted({size for found in sizes.values() for size in found if size != world_size})
    if other_sizes:
        shown = " or ".join(str(size) for size in other_sizes)
        return f"the ranks formed groups of {shown} ranks, not one world of {world_size}: {_other_size_cause(records, world_size)}"
    alone = [
        rank for rank, record in records.items() if record.get("ended") and record.get("torch") and not sizes[rank]
    ]
    if len(alone) == world_size:
        return f"each rank trained alone: no rank initialized torch.distributed (nor Horovod, nor MPI); {_LIKELY_CAUSE}"
    return None


def _other_size_cause(records: Mapping[int, Mapping[str, Any]], world_size: int) -> str:
    """The likely cause of groups of another size than the job's: an MPI library other than the launcher's, or no
    launcher of theirs, when the ranks' MPI or Horovod worlds were those groups; a node count left at its default
    otherwise."""
    smaller = [
        group
        for record in records.values()
        for group in _groups(record)
        if group.get("backend") in _MPI_CAUSES and int(group["world_size"]) != world_size
    ]
    if not smaller:
        return _LIKELY_CAUSE
    held = "itself alone" if all(int(group["world_size"]) == 1 for group in smaller) else "fewer ranks than the job's"
    backend = "mpi" if any(group["backend"] == "mpi" for group in smaller) else "horovod"
    libraries = sorted({str(group["library"]) for group in smaller if group.get("library")})
    return _MPI_CAUSES[backend].format(held=held, library=f" ({', '.join(libraries)})" if libraries else "")


def script_end_times(records: Mapping[int, Mapping[str, Any]], ranks: list[int]) -> dict[int, float] | None:
    """When each of ``ranks`` ended its own code, by its world record; None unless every one of them recorded it (a
    rank killed by a signal, or not Python, records none: its process's end is then the only measure for all)."""
    times = {rank: (records.get(rank) or {}).get(SCRIPT_ENDED) for rank in ranks}
    if not all(isinstance(time, (int, float)) and not isinstance(time, bool) for time in times.values()):
        return None
    return {rank: float(time) for rank, time in times.items()}


def judge(
    summary: dict[str, Any],
    records: Mapping[int, Mapping[str, Any]],
    world_check: str,
    spawned: Mapping[int, list[Mapping[str, Any]]] | None = None,
) -> None:
    """Add the ``world`` key to a run's ``summary``; a run that otherwise succeeded fails when its ranks did not form
    one world and ``world_check`` is ``fail`` (``warn``: the verdict is said, the status stays; ``off``: no verdict).
    ``spawned``: the world records of the processes the ranks started (rank -> records).
    """
    if world_check == "off":
        return
    found = verdict(records, int(summary["world_size"]), spawned)
    summary["world"] = found
    if found["formed"] is False and world_check == "fail" and summary["status"] == "succeeded":
        summary.update(status="failed", failure_reasons=[found["text"]], root_cause_kind=WORLD)
