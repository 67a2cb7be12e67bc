"""The rank exit guard: every rank's ``sitecustomize``, which leaves the gloo process group before Python is torn down
and records the world the rank joined.

A rank that finished its work can abort at interpreter exit with SIGABRT ("terminate called without an active
exception", pytorch/pytorch#117762): gloo's worker threads still hold work whose tensors take the GIL when they are
released, and the interpreter is being finalized. Destroying the process group in an ``atexit`` callback, while the
interpreter is whole, removes the race (3 ranks that exit right after their last collective, in the training image:
the race in 14 of 90 ranks, none with the guard).

Destroying the group ends its worker threads only when nothing else holds it. A module that reads the group as a
default argument when it is imported after ``init_process_group`` holds it: DistributedDataParallel imports
``torch._dynamo``, which imports ``torch.distributed.nn.functional``, whose ten functions then keep ``group.WORLD``.
The guard drops such defaults, as it drops the group. What it cannot release (the script's own global, a model in a
module variable) leaves the workers running: the guard then gives them the GIL for a moment, while the interpreter
is whole, so that a worker still holding the last all-reduce releases it now and not in the teardown (the abort
happened there: a worker waiting for the GIL to free its work's tensor, the main thread finalizing). Idle workers
hold no Python object; the group is destroyed with whatever holds it.

The guard never chooses how the rank ends: every ending (``sys.exit``, ``raise SystemExit``, ``exit()``, an uncaught
exception, ``os._exit``, a signal, a normal end) gives the status Python gives it. The status it can see (what
``sys.exit``, ``exit`` and ``quit`` were asked for, an uncaught exception) only decides whether it leaves the group:
a failing rank may have a collective in flight that never ends, and destroying the group would wait for it.

It also records the world: each process group the rank initializes (backend, world size, rank) as it is
initialized (``torch.distributed``'s ``init_process_group``; Horovod's ``hvd.init()`` in any of its frameworks; MPI's
``COMM_WORLD`` once mpi4py initialized it, with the MPI library's name), and at the end which frameworks that form a
world their own way (TensorFlow, Horovod, MPI, JAX) the rank imported, in
``<job_dir>/status/world-rank-<RANK>.json`` (:data:`WORLD_RECORD`): the run summary judges from them whether the
ranks formed one world (world.py). The rank's own process (the rank wrapper's child) records its
groups and its end there; a process it starts (``torch.multiprocessing.spawn``, a fork, a Python it runs) records
only the groups it initializes, in ``spawned-world-rank-<RANK>-<pid>.json`` (:data:`SPAWNED_WORLD_RECORD`): the
multi-node pattern of pytorch/examples' ImageNet script, one process per node spawning the workers of one world.

The rank wrapper (``rank.sh``) puts the directory holding this file, named ``sitecustomize.py``, first on every
rank's ``PYTHONPATH``. Then the next ``sitecustomize`` on the path (the image's or the user's own) runs, as Python
would have run it. Imported under any other name (the collection's modules, the tests), the file does nothing.
"""

from __future__ import annotations

import atexit
import builtins
import functools
import gc
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import time
from types import FunctionType, ModuleType
from typing import Any, Callable, Container, Iterable, Optional

GUARD_MODULE = "sitecustomize"
# The name torch gives each worker thread of a gloo process group (ProcessGroupGloo::runLoop).
GLOO_WORKER_THREAD = "pt_gloo_runloop"
THREADS_DIR = "/proc/self/task"
# How long the guard gives a held group's workers the GIL: a worker that finished the last collective releases its
# work within microseconds once it has the GIL.
SETTLE_SECONDS = 0.2
# How long the workers of a group just released (destroyed, collected) may take to end before the guard takes the
# group for held: they end on their own schedule, later on a loaded machine. Polled every WORKERS_POLL_SECONDS.
WORKERS_END_SECONDS = 0.5
WORKERS_POLL_SECONDS = 0.01
# The module that defines init_process_group (torch.distributed re-exports it).
C10D_MODULE = "torch.distributed.distributed_c10d"
# The module whose HorovodBasics.init is every Horovod framework's hvd.init (each binds it when it is imported).
HOROVOD_BASICS_MODULE = "horovod.common.basics"
# mpi4py's MPI: importing it initializes MPI (unless mpi4py.rc.initialize is off; then MPI.Init or Init_thread does).
MPI4PY_MODULE = "mpi4py.MPI"
MPI_INIT_FUNCTIONS = ("Init", "Init_thread")
# The rank wrapper's pid (rank.sh exports it): the process it started is the rank, whose world is recorded.
WRAPPER_PID_VARIABLE = "MULTINODE_RANK_WRAPPER_PID"
# The world record of a rank, beside its status (rank_contract.py), relative to the job directory.
WORLD_RECORD = "status/world-rank-{rank}.json"
# The world record of a process the rank started (its groups only), relative to the job directory.
SPAWNED_WORLD_RECORD = "status/spawned-world-rank-{rank}-{pid}.json"
# When the rank's own code ended (epoch seconds), in its world record. A rank that fails ends its code before its
# process ends (the interpreter's teardown closes its sockets), and the ranks its end breaks end theirs after that:
# the run report orders failed ranks by it (run_report.py), where the process's end alone can come in either order.
SCRIPT_ENDED = "script_ended"
# The exit status the rank's own code ended with, in its world record, where the guard can tell it (exit_status()): a
# rank's wrapper can be killed while the interpreter is torn down (mpiexec stops every rank once one has failed, and
# the rank whose exit broke the others' collectives may be still in its teardown), and the run report then reads the
# failure from here.
EXIT_STATUS = "exit_status"
# Whether the rank's code ended with an uncaught exception saying a peer of its collectives had gone (true), in its
# world record: a rank killed from outside breaks the others' collectives, they raise, and under mpiexec their wrappers
# (and the tee writing their logs) can be killed before the traceback reaches their logs; the run report names such a
# rank a consequence of the one that failed first (run_report.py), whatever the order their ends were recorded in.
LOST_PEER = "lost_peer"
# What a rank's exception says when a peer of its collectives has gone (gloo's TCP pairs, the rendezvous store).
PEER_GONE_TEXTS = ("Connection reset by peer", "Connection closed by peer", "Broken pipe")
# Modules with which a rank forms its world without torch.distributed: its ranks are not judged by their groups.
OTHER_WORLDS = ("tensorflow", "horovod", "mpi4py", "jax")


class ExitStatus:
    """What ``sys.exit``, ``exit`` or ``quit`` was last asked for in this process (their wrappers record it)."""

    requested: Any = None

    @classmethod
    def recording(cls, exit_function: Callable[..., Any]) -> Callable[..., Any]:
        """``exit_function`` (``sys.exit``, ``exit``, ``quit``) that first records its status."""

        @functools.wraps(exit_function)
        def exit_recorded(status: Any = None) -> Any:
            cls.requested = status
            return exit_function(status)

        return exit_recorded


def ends_normally(last_exception: Optional[BaseException], requested_status: Any) -> bool:
    """Whether the process is ending without an uncaught exception and without a failing ``sys.exit`` status."""
    return last_exception is None and requested_status in (None, 0)


def exit_status(last_exception: Optional[BaseException], requested_status: Any) -> Optional[int]:
    """The exit status Python gives the process for the way its code ended, or None where the guard cannot tell.

    An uncaught exception gives 1 (an uncaught ``KeyboardInterrupt`` ends the process by SIGINT: no status); a
    ``sys.exit``, ``exit`` or ``quit`` gives its status as Python turns it into one (None: 0, an integer: its low 8
    bits, anything else: 1). A normal end and ``raise SystemExit(...)`` leave no trace the guard can read: None.
    """
    if last_exception is not None:
        return None if isinstance(last_exception, KeyboardInterrupt) else 1
    if requested_status is None:
        return None
    if isinstance(requested_status, int):
        return requested_status & 0xFF
    return 1


def lost_a_peer(last_exception: Optional[BaseException]) -> bool:
    """Whether the uncaught exception the rank's code ended with says a peer of its collectives had gone. Only that
    is recorded, never the exception's text (it may hold what the job keeps secret)."""
    return last_exception is not None and any(text in str(last_exception) for text in PEER_GONE_TEXTS)


def gloo_group_left_open(modules: dict[str, ModuleType]) -> Optional[ModuleType]:
    """``torch.distributed`` when the script initialized a process group with a gloo backend and did not destroy it.

    torch is never imported here: a process that did not import it (the launcher, a TensorFlow rank) has nothing to
    leave.
    """
    distributed = modules.get("torch.distributed")
    if distributed is None or not distributed.is_available() or not distributed.is_initialized():
        return None
    return distributed if "gloo" in str(distributed.get_backend()) else None


def leave_process_group() -> None:
    """The ``atexit`` callback: destroy a gloo process group the rank left open, if the rank is ending normally.

    If the group's worker threads outlive that (something the guard cannot release still holds the group), they get
    the GIL for a moment, while the interpreter is whole. The rank then ends as Python ends it, with its own status.
    """
    if not ends_normally(getattr(sys, "last_value", None), ExitStatus.requested):
        return
    distributed = gloo_group_left_open(sys.modules)
    if distributed is None:
        return
    group = getattr(getattr(distributed, "group", None), "WORLD", None)
    try:
        distributed.destroy_process_group()
    except Exception as exc:  # pylint: disable=broad-exception-caught
        # The exit status is the script's: a failed clean-up is said, and the interpreter ends as it would have.
        sys.stderr.write(f"multinode.training rank exit guard: could not leave the process group: {exc}\n")
        return
    if group is not None:
        release_defaults(group, list(sys.modules.values()))
    del group
    if gloo_workers_running(THREADS_DIR):
        # A group held only by a reference cycle (a model in one) is released by a collection, while the interpreter
        # is whole (0.2 s in a torch rank, so only when needed).
        gc.collect()
        if gloo_workers_remain(THREADS_DIR, WORKERS_END_SECONDS):
            let_workers_settle()


def release_defaults(held: object, modules: Iterable[Optional[ModuleType]]) -> None:
    """Replace ``held`` by None wherever a module-level function keeps it as a default argument."""
    # type(), not isinstance(): a module's other attributes may warn when their __class__ is read (deprecated names).
    for module in modules:
        if not issubclass(type(module), ModuleType):
            continue
        for function in list(vars(module).values()):
            if type(function) is FunctionType:  # pylint: disable=unidiomatic-typecheck
                _release_default(function, held)


def _release_default(function: FunctionType, held: object) -> None:
    """Drop ``held`` from ``function``'s positional and keyword-only defaults, if it is among them."""
    defaults = function.__defaults__ or ()
    keyword_defaults = function.__kwdefaults__ or {}
    if any(value is held for value in defaults):
        function.__defaults__ = tuple(None if value is held else value for value in defaults)
    if any(value is held for value in keyword_defaults.values()):
        function.__kwdefaults__ = {name: None if value is held else value for name, value in keyword_defaults.items()}


def gloo_workers_running(threads_dir: str) -> bool:
    """Whether a thread of this process is a gloo process group's worker (by the name torch gives it)."""
    try:
        threads = os.listdir(threads_dir)
    except OSError:
        return False
    for thread in threads:
        try:
            with open(os.path.join(threads_dir, thread, "comm"), encoding="utf-8") as comm:
                if comm.read().strip() == GLOO_WORKER_THREAD:
                    return True
        except OSError:
            continue
    return False


def gloo_workers_remain(threads_dir: str, seconds: float) -> bool:
    """Whether gloo workers still run ``seconds`` from now (they are looked for every WORKERS_POLL_SECONDS, and the
    answer is no as soon as they are gone): a released group's workers end after it, not with it."""
    deadline = time.monotonic() + seconds
    while gloo_workers_running(threads_dir):
        if time.monotonic() >= deadline:
            return True
        time.sleep(WORKERS_POLL_SECONDS)
    return False


def let_workers_settle() -> None:
    """Give the GIL to a held group's workers for a moment (``time.sleep`` releases it), so that one still holding
    the last collective's work releases it while the interpreter is whole; say why the rank waits."""
    sys.stderr.write(
        "multinode.training rank exit guard: the gloo process group is still held after destroy_process_group();"
        f" its worker threads get {SETTLE_SECONDS} s to release their last work before the interpreter's teardown"
        " (pytorch/pytorch#117762)\n"
    )
    time.sleep(SETTLE_SECONDS)


class WorldRecord:
    """The rank's world record (:data:`WORLD_RECORD`): the groups it initialized, then what it imported; or, for a
    process the rank started (``spawned``), the groups that process initialized (:data:`SPAWNED_WORLD_RECORD`)."""

    def __init__(self, job_dir: str, rank: int, spawned: bool = False) -> None:
        self.job_dir, self.rank = job_dir, rank
        self.pid, self.path, self.content = self._start(spawned)

    def _start(self, spawned: bool) -> tuple[int, str, dict[str, Any]]:
        """This process's id, the path of its record and the record's content before any group."""
        pid = os.getpid()
        path = os.path.join(self.job_dir, (SPAWNED_WORLD_RECORD if spawned else WORLD_RECORD).format(rank=self.rank, pid=pid))
        return pid, path, {"rank": self.rank, "groups": [], **({"spawned": True} if spawned else {})}

    def add_group(self, group: dict[str, Any]) -> None:
        """Record a group this process has just initialized (:func:`torch_group`, :func:`horovod_group`,
        :func:`mpi_group`); in a process forked from the one the record is of (multiprocessing's fork), as a record of
        its own."""
        if os.getpid() != self.pid:
            self.pid, self.path, self.content = self._start(spawned=True)
        self.content["groups"].append(group)
        self.write()

    def add_end(self, modules: Container[str], now: float, status: Optional[int], lost_peer: bool) -> None:
        """Record the rank's end: whether it imported torch, the frameworks of :data:`OTHER_WORLDS` it imported,
        when its own code ended (``now``, epoch seconds: the script and its ``atexit`` callbacks are done, the
        interpreter's teardown has not begun), the exit status it ended with (``status``, None where unknown) and
        whether it ended on a peer that had gone (``lost_peer``, :func:`lost_a_peer`). Nothing in a process forked
        from the rank's (its end is not the rank's)."""
        if os.getpid() != self.pid or self.content.get("spawned"):
            return
        self.content["torch"] = "torch" in modules
        self.content["other_worlds"] = sorted(name for name in OTHER_WORLDS if name in modules)
        self.content["ended"] = True
        self.content[SCRIPT_ENDED] = now
        self.content[EXIT_STATUS] = status
        self.content[LOST_PEER] = lost_peer
        self.write()

    def write(self) -> None:
        """Write the record whole (a temporary file renamed over it); a failure is said, never raised."""
        temporary = f"{self.path}.{os.getpid()}.tmp"
        try:
            with open(temporary, "w", encoding="utf-8") as handle:
                json.dump(self.content, handle)
            os.replace(temporary, self.path)
        except OSError as exc:
            sys.stderr.write(f"multinode.training rank exit guard: could not record the rank's world: {exc}\n")


def torch_group(distributed: ModuleType) -> dict[str, Any]:
    """The default group ``distributed`` (torch.distributed) holds."""
    return {
        "backend": str(distributed.get_backend()),
        "world_size": int(distributed.get_world_size()),
        "rank": int(distributed.get_rank()),
    }


def horovod_group(basics: Any) -> dict[str, Any]:
    """The world a Horovod framework's ``basics`` (a HorovodBasics, once its ``init`` ran) joined."""
    return {"backend": "horovod", "world_size": int(basics.size()), "rank": int(basics.rank())}


def mpi_group(mpi: ModuleType) -> dict[str, Any]:
    """MPI's ``COMM_WORLD`` as mpi4py's ``mpi`` (mpi4py.MPI, initialized) sees it, with the name of the MPI library it
    loaded (the first part of its version line: "Open MPI v4.1.4", "Intel(R) MPI Library 2021.18 for Linux* OS")."""
    library = str(mpi.Get_library_version()).strip().splitlines()[0].split(",")[0].strip()
    world = mpi.COMM_WORLD
    return {"backend": "mpi", "world_size": int(world.Get_size()), "rank": int(world.Get_rank()), "library": library}


def add_group_said(record: WorldRecord, read_group: Callable[[], dict[str, Any]]) -> None:
    """Record the group ``read_group`` reads; a failure to read or record it is said, never raised."""
    try:
        record.add_group(read_group())
    except Exception as exc:  # pylint: disable=broad-exception-caught
        sys.stderr.write(f"multinode.training rank exit guard: could not read the group the rank joined: {exc}\n")


def recording_after(initialize: Callable[..., Any], record: WorldRecord, read_group: Callable[..., dict[str, Any]]) -> Callable[..., Any]:
    """``initialize`` that then records the group ``read_group`` reads from the same arguments; the script sees its
    result and errors as they are, and a failure to record never fails it."""

    @functools.wraps(initialize)
    def initialize_recorded(*args: Any, **kwargs: Any) -> Any:
        result = initialize(*args, **kwargs)
        add_group_said(record, lambda: read_group(*args))
        return result

    return initialize_recorded


def patch_c10d(record: WorldRecord, c10d: ModuleType) -> None:
    """Record each default group ``init_process_group`` initializes."""
    c10d.init_process_group = recording_after(c10d.init_process_group, record, lambda *_: torch_group(c10d))


def patch_horovod(record: WorldRecord, basics_module: ModuleType) -> None:
    """Record the world each ``hvd.init()`` joins (HorovodBasics.init, before a framework binds it)."""
    basics = basics_module.HorovodBasics
    basics.init = recording_after(basics.init, record, horovod_group)


def patch_mpi(record: WorldRecord, mpi: ModuleType) -> None:
    """Record MPI's world now if importing mpi4py.MPI initialized it, else once the script initializes it."""
    if mpi.Is_initialized():
        add_group_said(record, lambda: mpi_group(mpi))
        return
    for name in MPI_INIT_FUNCTIONS:
        setattr(mpi, name, recording_after(getattr(mpi, name), record, lambda *_: mpi_group(mpi)))


class AfterImport(importlib.abc.MetaPathFinder):
    """Calls ``then(module)`` once the module ``name`` has run, before anything can import names from it.

    The spec and its loader stay the ones Python found (``__loader__``, tracebacks and ``inspect`` see no difference):
    only that loader's ``exec_module`` is followed by ``then``.
    """

    def __init__(self, name: str, then: Callable[[ModuleType], None]) -> None:
        self.name = name
        self.then = then

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Optional[importlib.machinery.ModuleSpec]:
        """The spec the other finders give ``name``, its loader's ``exec_module`` followed by ``then``."""
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader.exec_module = self._followed(spec.loader.exec_module)  # type: ignore[method-assign]
        return spec

    def _followed(self, exec_module: Callable[[ModuleType], None]) -> Callable[[ModuleType], None]:
        def exec_then(module: ModuleType) -> None:
            exec_module(module)
            self.then(module)

        return exec_then


def record_world(job_dir: str, environ: dict[str, str], parent_pid: int) -> None:
    """Record this process's world if it is a rank (the rank wrapper's child, with a RANK), or the groups it
    initializes if a rank started it (a process under a rank wrapper, not its child)."""
    rank = environ.get("RANK", "")
    if not environ.get(WRAPPER_PID_VARIABLE) or not rank.isdigit():
        return
    spawned = environ[WRAPPER_PID_VARIABLE] != str(parent_pid)
    record = WorldRecord(job_dir, int(rank), spawned=spawned)

    for name, patch in ((C10D_MODULE, patch_c10d), (HOROVOD_BASICS_MODULE, patch_horovod), (MPI4PY_MODULE, patch_mpi)):
        sys.meta_path.insert(0, AfterImport(name, functools.partial(patch, record)))
    if spawned:
        return

    def add_end() -> None:
        last_exception = getattr(sys, "last_value", None)
        status = exit_status(last_exception, ExitStatus.requested)
        record.add_end(sys.modules, time.time(), status, lost_a_peer(last_exception))

    atexit.register(add_end)


def next_sitecustomize(search_path: list[str], own_directory: str) -> Optional[importlib.machinery.ModuleSpec]:
    """Where the ``sitecustomize`` Python would have run without this one is, if any."""
    rest = [entry for entry in search_path if os.path.abspath(entry or os.curdir) != own_directory]
    return importlib.machinery.PathFinder.find_spec(GUARD_MODULE, rest)


def run_next_sitecustomize(own_directory: str) -> None:
    """Run the next ``sitecustomize`` on ``sys.path`` in this one's place; its errors are reported as Python would."""
    spec = next_sitecustomize(sys.path, own_directory)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules[GUARD_MODULE] = module
    spec.loader.exec_module(module)


def install(own_directory: str) -> None:
    """Record exit statuses, leave the gloo group at exit, record the rank's world, then run the next
    ``sitecustomize``.

    Registered first, the callbacks run after every ``atexit`` callback the script and its libraries register: the
    world's end is recorded, then the group left.
    """
    sys.exit = ExitStatus.recording(sys.exit)
    for name in ("exit", "quit"):
        if hasattr(builtins, name):
            setattr(builtins, name, ExitStatus.recording(getattr(builtins, name)))
    atexit.register(leave_process_group)
    record_world(os.path.dirname(own_directory), dict(os.environ), os.getppid())
    run_next_sitecustomize(own_directory)


if __name__ == GUARD_MODULE:
    install(os.path.dirname(os.path.abspath(__file__)))
