"""The rank exit guard: every rank's ``sitecustomize``, which leaves the gloo process group before Python is torn down.

A rank that finished its work can abort at interpreter exit with SIGABRT ("terminate called without an active
exception", pytorch/pytorch#117762): gloo's worker threads still hold work whose tensors take the GIL when they are
released, and the interpreter is being finalized. Destroying the process group in an ``atexit`` callback, while the
interpreter is whole, removes the race (3 ranks that exit right after their last collective, in the training image:
the race in 14 of 90 ranks, none with the guard).

Destroying the group ends its worker threads only when nothing else holds it. A module that reads the group as a
default argument when it is imported after ``init_process_group`` holds it: DistributedDataParallel imports
``torch._dynamo``, which imports ``torch.distributed.nn.functional``, whose ten functions then keep ``group.WORLD``.
The guard drops such defaults, as it drops the group. What it cannot release (the script's own global, a model in a
module variable) leaves the workers running; the rank then ends right there, its open files flushed, with its status
0, instead of racing them through the interpreter's teardown (the abort happened there, in a worker thread releasing
its last all-reduce).

The rank wrapper (``rank.sh``) puts the directory holding this file, named ``sitecustomize.py``, first on every
rank's ``PYTHONPATH``. It acts only where the script itself initialized a gloo process group and left it, and only on
a normal exit: a failing rank may have a collective in flight that never ends, and destroying the group would wait
for it. Then the next ``sitecustomize`` on the path (the image's or the user's own) runs, as Python would have run it.
Imported under any other name (the collection's modules, the tests), the file does nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib.machinery
import importlib.util
import io
import os
import sys
from types import FunctionType, ModuleType
from typing import Any, Callable, Iterable, NoReturn, Optional

GUARD_MODULE = "sitecustomize"
# The name torch gives each worker thread of a gloo process group (ProcessGroupGloo::runLoop).
GLOO_WORKER_THREAD = "pt_gloo_runloop"
THREADS_DIR = "/proc/self/task"


class ExitStatus:
    """What ``sys.exit`` was last asked for in this process (the wrapped ``sys.exit`` records it)."""

    requested: Any = None

    @classmethod
    def recording(cls, exit_function: Callable[..., Any]) -> Callable[..., Any]:
        """``exit_function`` (``sys.exit``) that first records its status."""

        def exit_recorded(status: Any = None) -> Any:
            cls.requested = status
            return exit_function(status)

        exit_recorded.__doc__ = exit_function.__doc__
        return exit_recorded


def ends_normally(last_exception: Optional[BaseException], requested_status: Any) -> bool:
    """Whether the process is ending without an uncaught exception and without a failing ``sys.exit`` status."""
    return last_exception is None and requested_status in (None, 0)


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

    If the group's worker threads outlive that (something the guard cannot release still holds the group), the rank
    ends here with status 0 rather than in the interpreter's teardown.
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
        if gloo_workers_running(THREADS_DIR):
            end_rank_now()


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


def end_rank_now() -> NoReturn:
    """End the rank with status 0 before the interpreter's teardown: say why, flush every open file, then exit."""
    sys.stderr.write(
        "multinode.training rank exit guard: the gloo process group is still held after destroy_process_group();"
        " the rank ends here, its work done, before its worker threads can race the interpreter's teardown"
        " (pytorch/pytorch#117762)\n"
    )
    for stream in gc.get_objects():
        if issubclass(type(stream), io.IOBase):
            # A closed or detached file refuses (ValueError), a broken pipe fails (OSError): nothing left to flush.
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
    os._exit(0)


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
    """Record ``sys.exit`` statuses, leave the gloo group at exit, then run the next ``sitecustomize``.

    Registered first, the callback runs after every ``atexit`` callback the script and its libraries register.
    """
    sys.exit = ExitStatus.recording(sys.exit)
    atexit.register(leave_process_group)
    run_next_sitecustomize(own_directory)


if __name__ == GUARD_MODULE:
    install(os.path.dirname(os.path.abspath(__file__)))
