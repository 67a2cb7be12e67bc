# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rank exit guard, run for real as a Python's ``sitecustomize`` in front of a stand-in ``torch.distributed``.

The stand-in records the calls the guard makes, and its group runs a worker thread with the name torch gives gloo's
(``pt_gloo_runloop``) until the last reference to the group is gone; the real torch and gloo are exercised by the
molecule scenario's healthy runs (the training image).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
import types
from pathlib import Path

import pytest

from ansible_collections.multinode.training.plugins.module_utils import rank_contract, rank_exit_guard
from ansible_collections.multinode.training.plugins.module_utils.rank_exit_guard import (
    EXIT_STATUS,
    LOST_PEER,
    SCRIPT_ENDED,
    ends_normally,
    gloo_workers_remain,
    gloo_workers_running,
    release_defaults,
)

# A stand-in torch.distributed (its distributed_c10d, which torch.distributed re-exports, as torch's own):
# init_process_group(backend), is_initialized, get_backend, get_world_size, get_rank, destroy_process_group, and
# group.WORLD, whose worker thread runs until nothing holds the group any more.
STAND_IN_DISTRIBUTED = """
import ctypes, os, threading
STATE = {"backend": None, "group": None}

def _work(named, stop):
    ctypes.CDLL(None).prctl(15, b"pt_gloo_runloop", 0, 0, 0)  # PR_SET_NAME, as torch names gloo's workers
    named.set()
    stop.wait()

class _Group:
    def __init__(self):
        named, self.stop = threading.Event(), threading.Event()
        self.worker = threading.Thread(target=_work, args=(named, self.stop), daemon=True)
        self.worker.start()
        named.wait()

    def __del__(self):
        self.stop.set()
        self.worker.join()
        print("workers stopped", flush=True)

class _WorldMeta(type):
    @property
    def WORLD(cls):
        return STATE["group"]

class group(metaclass=_WorldMeta):
    pass

def is_available():
    return True

def is_initialized():
    return STATE["backend"] is not None

def init_process_group(backend="gloo"):
    STATE["backend"] = backend
    STATE["group"] = _Group()

def get_backend():
    return STATE["backend"]

def get_world_size():
    return int(os.environ.get("STAND_IN_WORLD_SIZE", "1"))

def get_rank():
    return int(os.environ.get("RANK", "0"))

def destroy_process_group():
    if os.environ.get("DESTROY_FAILS"):
        raise RuntimeError("the store is gone")
    print("destroyed", flush=True)
    STATE["backend"] = None
    STATE["group"] = None
"""


@pytest.fixture(name="site")
def site_fixture(tmp_path: Path) -> dict[str, Path]:
    """The guard as ``sitecustomize.py`` in its own directory, a stand-in torch and a directory for scripts."""
    guard = tmp_path / "guard"
    guard.mkdir()
    shutil.copy(rank_exit_guard.__file__, guard / "sitecustomize.py")
    packages = tmp_path / "packages"
    (packages / "torch" / "distributed").mkdir(parents=True)
    (packages / "torch" / "__init__.py").write_text("from torch import distributed\n")
    (packages / "torch" / "distributed" / "__init__.py").write_text("from .distributed_c10d import *\n")
    (packages / "torch" / "distributed" / "distributed_c10d.py").write_text(STAND_IN_DISTRIBUTED)
    (tmp_path / "status").mkdir()
    return {"guard": guard, "packages": packages, "root": tmp_path}


def run_script(site: dict[str, Path], body: str, *more_path: Path, env: dict[str, str] | None = None):
    """Run ``body`` as a script with the guard first on PYTHONPATH, as rank.sh runs a rank."""
    script = site["root"] / "train.py"
    script.write_text(textwrap.dedent(body))
    python_path = ":".join(str(path) for path in (site["guard"], *more_path, site["packages"]))
    return subprocess.run(
        [sys.executable, str(script)],
        env={"PYTHONPATH": python_path, "PATH": "/usr/bin:/bin", **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


TRAIN = """
import atexit, sys
import torch.distributed as dist
dist.init_process_group("{backend}")
atexit.register(print, "the script's own atexit", flush=True)
print("trained", flush=True)
"""


def test_a_rank_that_ends_normally_leaves_its_gloo_group_after_its_own_atexit_callbacks(site: dict[str, Path]) -> None:
    result = run_script(site, TRAIN.format(backend="gloo"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["trained", "the script's own atexit", "destroyed", "workers stopped"]
    assert result.stderr == ""


def test_a_group_kept_as_a_default_argument_is_released_with_it(site: dict[str, Path]) -> None:
    # As torch.distributed.nn.functional keeps group.WORLD when DistributedDataParallel imports it after the init.
    (site["packages"] / "collectives.py").write_text(
        "import torch.distributed as dist\n"
        "def all_reduce(tensor, group=dist.group.WORLD):\n    return tensor\n"
        "def broadcast(tensor, *, group=dist.group.WORLD, src=0):\n    return tensor\n"
    )
    result = run_script(site, TRAIN.format(backend="gloo") + "import collectives\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == ["destroyed", "workers stopped"]
    assert result.stderr == ""


def test_a_group_held_only_by_a_reference_cycle_is_collected_with_it(site: dict[str, Path]) -> None:
    body = TRAIN.format(backend="gloo") + (
        "import gc\ngc.disable()\nclass Model:\n    pass\n"
        "model = Model()\nmodel.itself, model.group = model, dist.group.WORLD\ndel model\n"
    )
    result = run_script(site, body)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == ["destroyed", "workers stopped"]
    assert result.stderr == ""


def test_a_group_the_guard_cannot_release_gets_its_workers_settled_and_the_rank_ends_as_python_ends_it(
    site: dict[str, Path],
) -> None:
    # The script's own global holds the group: its workers get the GIL for a moment before the interpreter's teardown.
    output = site["root"] / "metrics.txt"
    body = TRAIN.format(backend="gloo") + f"WORLD = dist.group.WORLD\nlog = open({str(output)!r}, 'w')\nlog.write('kept')\n"
    result = run_script(site, body)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:3] == ["trained", "the script's own atexit", "destroyed"]
    assert "the gloo process group is still held after destroy_process_group()" in result.stderr
    assert output.read_text() == "kept"


# Every way a script ends, with the group still held by the script's own global (a model in a module variable): the
# status is the one Python gives, whatever the guard did.
ENDINGS = [
    ("raise SystemExit(3)", 3),
    ("exit(3)", 3),
    ("quit(3)", 3),
    ("sys.exit(3)", 3),
    ("raise SystemExit(main())", 5),
    ("raise RuntimeError('diverged')", 1),
    ("os._exit(3)", 3),
    ("os.kill(os.getpid(), signal.SIGTERM)", -signal.SIGTERM),
    ("os.kill(os.getpid(), signal.SIGKILL)", -signal.SIGKILL),
    ("print('done', flush=True)", 0),
    ("raise SystemExit(0)", 0),
]


@pytest.mark.parametrize(("ending", "status"), ENDINGS)
def test_every_ending_keeps_the_status_python_gives_it(site: dict[str, Path], ending: str, status: int) -> None:
    body = (
        "import os, signal\n" + TRAIN.format(backend="gloo")
        + "MODEL = dist.group.WORLD\ndef main():\n    return 5\n" + ending + "\n"
    )
    result = run_script(site, body)
    assert result.returncode == status, result.stderr


@pytest.mark.parametrize("ending", ["sys.exit(0)", "sys.exit()", "sys.exit(None)", "raise SystemExit(0)"])
def test_an_exit_with_status_0_leaves_the_group(site: dict[str, Path], ending: str) -> None:
    result = run_script(site, TRAIN.format(backend="gloo") + ending + "\n")
    assert result.returncode == 0, result.stderr
    assert "destroyed" in result.stdout.splitlines()


@pytest.mark.parametrize(
    ("ending", "status"),
    [
        ("sys.exit(3)", 3),
        ("sys.exit('bad input')", 1),
        ("raise ValueError('diverged')", 1),
        ("from sys import exit; exit(4)", 4),
    ],
)
def test_a_failing_rank_keeps_its_group_and_its_exit_status(site: dict[str, Path], ending: str, status: int) -> None:
    # A failing rank may have a collective in flight that never ends: destroying the group would wait for it.
    result = run_script(site, TRAIN.format(backend="gloo") + ending + "\n")
    assert result.returncode == status
    assert "destroyed" not in result.stdout


def test_a_group_without_gloo_is_left_alone(site: dict[str, Path]) -> None:
    result = run_script(site, TRAIN.format(backend="ccl"))
    assert result.returncode == 0, result.stderr
    assert "destroyed" not in result.stdout


def test_a_group_the_script_destroyed_itself_is_not_destroyed_again(site: dict[str, Path]) -> None:
    result = run_script(site, TRAIN.format(backend="gloo") + "dist.destroy_process_group()\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("destroyed") == 1


def test_a_python_that_never_imported_torch_does_not_import_it(site: dict[str, Path]) -> None:
    body = "import atexit, sys\natexit.register(lambda: print('torch' in sys.modules, flush=True))\n"
    result = run_script(site, body)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["False"]


def test_a_failed_clean_up_is_said_and_the_exit_status_stays_the_scripts(site: dict[str, Path]) -> None:
    result = run_script(site, TRAIN.format(backend="gloo"), env={"DESTROY_FAILS": "1"})
    assert result.returncode == 0
    assert "rank exit guard: could not leave the process group: the store is gone" in result.stderr


def test_the_next_sitecustomize_on_the_path_still_runs(site: dict[str, Path]) -> None:
    users = site["root"] / "users"
    users.mkdir()
    (users / "sitecustomize.py").write_text("import builtins\nbuiltins.USERS_SITE = 'ran'\n")
    body = "import sitecustomize\nprint(USERS_SITE, sitecustomize.__file__, flush=True)\n"
    result = run_script(site, body, users)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ran", str(users / "sitecustomize.py")]


def test_an_error_in_the_next_sitecustomize_is_reported_as_python_would(site: dict[str, Path]) -> None:
    users = site["root"] / "users"
    users.mkdir()
    (users / "sitecustomize.py").write_text("raise RuntimeError('broken site')\n")
    result = run_script(site, "print('ran', flush=True)\n", users)
    assert result.returncode == 0
    assert result.stdout == "ran\n"
    assert "Error in sitecustomize" in result.stderr


def test_imported_as_a_module_util_it_changes_nothing() -> None:
    assert sys.exit.__name__ == "exit"  # the guard's install() ran only as a rank's sitecustomize


def test_gloo_workers_running_goes_by_thread_names(tmp_path: Path) -> None:
    for thread, name in [("7", "python3"), ("8", "pt_tcpstore_uv")]:
        (tmp_path / thread).mkdir()
        (tmp_path / thread / "comm").write_text(name + "\n")
    assert not gloo_workers_running(str(tmp_path))
    (tmp_path / "9").mkdir()
    (tmp_path / "9" / "comm").write_text("pt_gloo_runloop\n")
    assert gloo_workers_running(str(tmp_path))
    assert not gloo_workers_running(str(tmp_path / "gone"))


def test_release_defaults_replaces_only_the_held_object() -> None:
    held, other = object(), object()
    module = types.ModuleType("collectives")
    exec(  # pylint: disable=exec-used
        "def positional(a, group=HELD, other=OTHER): pass\n"
        "def keyword(*, group=HELD, other=OTHER): pass\n"
        "def untouched(group=OTHER): pass\n",
        {"HELD": held, "OTHER": other},
        module.__dict__,
    )
    release_defaults(held, [module, None])
    assert module.positional.__defaults__ == (None, other)
    assert module.keyword.__kwdefaults__ == {"group": None, "other": other}
    assert module.untouched.__defaults__ == (other,)


@pytest.mark.parametrize(
    ("last_exception", "requested", "normal"),
    [(None, None, True), (None, 0, True), (None, 3, False), (None, "message", False), (ValueError("x"), None, False)],
)
def test_ends_normally(last_exception: BaseException | None, requested: object, normal: bool) -> None:
    assert ends_normally(last_exception, requested) is normal


def run_rank(site: dict[str, Path], body: str, rank: int = 1, **env: str):
    """``body`` run as the rank wrapper's own child would run it: RANK set, the wrapper's pid its parent's."""
    return run_script(
        site, body, env={"RANK": str(rank), rank_contract.WRAPPER_PID_VARIABLE: str(os.getpid()), **env}
    )


def world_record(site: dict[str, Path], rank: int = 1) -> dict[str, object]:
    return json.loads((site["root"] / "status" / f"world-rank-{rank}.json").read_text())


def ended_record(site: dict[str, Path], started: float, ended: float, rank: int = 1) -> dict[str, object]:
    """The world record of a rank run from ``started`` to ``ended`` (epoch seconds), without the moment its code
    ended, which is checked to lie between them."""
    record = world_record(site, rank)
    script_ended = record.pop(SCRIPT_ENDED)
    assert isinstance(script_ended, float) and started <= script_ended <= ended
    return record


def test_a_rank_records_the_group_it_initialized_and_its_end(site: dict[str, Path]) -> None:
    started = time.time()
    result = run_rank(site, TRAIN.format(backend="gloo"), STAND_IN_WORLD_SIZE="3")
    assert result.returncode == 0, result.stderr
    assert ended_record(site, started, time.time()) == {
        "rank": 1,
        "groups": [{"backend": "gloo", "world_size": 3, "rank": 1}],
        "torch": True,
        "other_worlds": [],
        "ended": True,
        "exit_status": None,
        "lost_peer": False,
    }


def test_a_rank_that_never_initialized_a_group_records_none(site: dict[str, Path]) -> None:
    started = time.time()
    result = run_rank(site, "import torch\nprint('trained alone')\n")
    assert result.returncode == 0, result.stderr
    assert ended_record(site, started, time.time()) == {
        "rank": 1,
        "groups": [],
        "torch": True,
        "other_worlds": [],
        "ended": True,
        "exit_status": None,
        "lost_peer": False,
    }


def test_a_rank_that_forms_its_world_another_way_says_so(site: dict[str, Path]) -> None:
    (site["packages"] / "mpi4py").mkdir()
    (site["packages"] / "mpi4py" / "__init__.py").write_text("")
    result = run_rank(site, "import mpi4py, torch\n")
    assert result.returncode == 0, result.stderr
    assert world_record(site)["other_worlds"] == ["mpi4py"]


# Stand-ins for Horovod and mpi4py, shaped as theirs: every Horovod framework binds HorovodBasics.init when it is
# imported (horovod/torch/mpi_ops.py: ``_basics = _HorovodBasics(...)``, ``init = _basics.init``); mpi4py's MPI
# initializes MPI at its import unless mpi4py.rc.initialize is off, and names its library in Get_library_version.
STAND_IN_HOROVOD_BASICS = """
import os


class HorovodBasics:
    def __init__(self, pkg_path, *args):
        self._size = None

    def init(self, comm=None, process_sets=None):
        self._size = int(os.environ.get("STAND_IN_WORLD_SIZE", "1"))

    def size(self):
        return self._size

    def rank(self):
        return int(os.environ["RANK"]) % self._size
"""
STAND_IN_HOROVOD_TORCH = """
from horovod.common.basics import HorovodBasics as _HorovodBasics

_basics = _HorovodBasics(__file__, "mpi_lib_v2")
init = _basics.init
size = _basics.size
rank = _basics.rank
"""
STAND_IN_MPI = """
import os
from mpi4py import rc

_initialized = False


def Init():
    global _initialized
    _initialized = True


def Init_thread(required=3):
    global _initialized
    _initialized = True
    return required


def Is_initialized():
    return _initialized


def Get_library_version():
    return "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022\\x00"


class _World:
    def Get_size(self):
        return int(os.environ.get("STAND_IN_WORLD_SIZE", "1"))

    def Get_rank(self):
        return 0


COMM_WORLD = _World()
if rc.initialize:
    Init()
"""


def stand_in_horovod_and_mpi4py(packages: Path) -> None:
    for package in ("horovod", "horovod/common", "horovod/torch", "mpi4py"):
        (packages / package).mkdir(parents=True)
        (packages / package / "__init__.py").write_text("")
    (packages / "horovod" / "common" / "basics.py").write_text(STAND_IN_HOROVOD_BASICS)
    (packages / "horovod" / "torch" / "__init__.py").write_text(STAND_IN_HOROVOD_TORCH)
    (packages / "mpi4py" / "__init__.py").write_text("class rc:\n    initialize = True\n")
    (packages / "mpi4py" / "MPI.py").write_text(STAND_IN_MPI)


def test_a_horovod_rank_records_the_world_hvd_init_joined(site: dict[str, Path]) -> None:
    stand_in_horovod_and_mpi4py(site["packages"])
    result = run_rank(site, "import horovod.torch as hvd\nhvd.init()\nprint(hvd.size())\n", STAND_IN_WORLD_SIZE="3")
    assert result.returncode == 0, result.stderr
    record = world_record(site)
    assert (record["groups"], record["other_worlds"]) == ([{"backend": "horovod", "world_size": 3, "rank": 1}], ["horovod"])


@pytest.mark.parametrize(
    "body",
    [
        "from mpi4py import MPI\n",
        # mpi4py.rc.initialize off: the world is recorded once the script initializes MPI itself.
        "import mpi4py\nmpi4py.rc.initialize = False\nfrom mpi4py import MPI\nMPI.Init_thread(1)\n",
    ],
)
def test_an_mpi4py_rank_records_its_mpi_world_and_library(site: dict[str, Path], body: str) -> None:
    stand_in_horovod_and_mpi4py(site["packages"])
    result = run_rank(site, body, STAND_IN_WORLD_SIZE="1")
    assert result.returncode == 0, result.stderr
    assert world_record(site)["groups"] == [{"backend": "mpi", "world_size": 1, "rank": 0, "library": "Open MPI v4.1.4"}]


def test_an_mpi4py_rank_that_never_initialized_mpi_records_no_world(site: dict[str, Path]) -> None:
    stand_in_horovod_and_mpi4py(site["packages"])
    result = run_rank(site, "import mpi4py\nmpi4py.rc.initialize = False\nfrom mpi4py import MPI\n")
    assert result.returncode == 0, result.stderr
    assert world_record(site)["groups"] == []


@pytest.mark.parametrize(
    ("ending", "returncode", "recorded"),
    [
        ("sys.exit(3)", 3, 3),
        ("exit(3)", 3, 3),
        ("quit(3)", 3, 3),
        ("sys.exit(-1)", 255, 255),
        ("sys.exit('bad input')", 1, 1),
        ("raise RuntimeError('diverged')", 1, 1),
        ("sys.exit(0)", 0, 0),
        # What the guard cannot see is recorded as unknown: a normal end, SystemExit raised as it is, an uncaught
        # KeyboardInterrupt (Python ends the process by SIGINT).
        ("print('done')", 0, None),
        ("sys.exit()", 0, None),
        ("raise SystemExit(3)", 3, None),
        ("raise KeyboardInterrupt", -signal.SIGINT, None),
    ],
)
def test_a_rank_records_the_exit_status_its_code_ended_with(
    site: dict[str, Path], ending: str, returncode: int, recorded: int | None
) -> None:
    result = run_rank(site, "import sys\n" + TRAIN.format(backend="gloo") + ending + "\n")
    assert result.returncode == returncode, result.stderr
    assert world_record(site)[EXIT_STATUS] == recorded


@pytest.mark.parametrize(
    ("ending", "lost_peer"),
    [
        # gloo's words when a peer of a collective has gone (a rank killed from outside), as torch raises them.
        ("raise RuntimeError('[pair.cc:537] Read error [172.30.77.12]:34441: Connection reset by peer.')", True),
        ("raise RuntimeError('[pair.cc:534] Connection closed by peer [172.30.77.13]:16254')", True),
        ("raise BrokenPipeError(32, 'Broken pipe')", True),
        ("raise RuntimeError('diverged')", False),
        ("sys.exit(3)", False),
        ("print('done')", False),
    ],
)
def test_a_rank_records_whether_its_code_ended_on_a_peer_that_had_gone(
    site: dict[str, Path], ending: str, lost_peer: bool
) -> None:
    result = run_rank(site, "import sys\n" + TRAIN.format(backend="gloo") + ending + "\n")
    assert result.returncode in (0, 1, 3), result.stderr
    assert world_record(site)[LOST_PEER] is lost_peer


def test_a_group_recorded_before_a_killed_rank_ends_stays_recorded(site: dict[str, Path]) -> None:
    result = run_rank(site, "import os, signal\n" + TRAIN.format(backend="gloo") + "os.kill(os.getpid(), signal.SIGKILL)\n")
    assert result.returncode == -signal.SIGKILL
    assert world_record(site) == {"rank": 1, "groups": [{"backend": "gloo", "world_size": 1, "rank": 1}]}


def spawned_records(site: dict[str, Path], rank: int = 1) -> list[dict[str, object]]:
    return [json.loads(path.read_text()) for path in sorted((site["root"] / "status").glob(f"spawned-world-rank-{rank}-*.json"))]


def test_a_process_a_rank_started_records_its_groups_only(site: dict[str, Path]) -> None:
    """A Python the rank started (torch.multiprocessing.spawn's way: a new interpreter, the rank's environment): its
    groups in a record of its own, no end, and the rank's own record untouched."""
    result = run_script(site, TRAIN.format(backend="gloo"), env={"RANK": "1", rank_contract.WRAPPER_PID_VARIABLE: "1"})
    assert result.returncode == 0, result.stderr
    assert not (site["root"] / "status" / "world-rank-1.json").exists()
    assert spawned_records(site) == [{"rank": 1, "groups": [{"backend": "gloo", "world_size": 1, "rank": 1}], "spawned": True}]


def test_a_process_forked_from_the_rank_records_its_groups_apart_and_leaves_the_rank_s_end(site: dict[str, Path]) -> None:
    """multiprocessing's fork: the child inherits the rank's record; its group goes to a record of its own, and its
    end (a normal exit runs the inherited atexit callbacks) is not recorded as the rank's."""
    body = (
        "import os, sys\n"
        "import torch.distributed as dist\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    dist.init_process_group('gloo')\n"
        "    sys.exit(7)\n"
        "os.waitpid(child, 0)\n"
        "print('rank done', flush=True)\n"
    )
    result = run_rank(site, body, STAND_IN_WORLD_SIZE="4")
    assert result.returncode == 0, result.stderr
    rank_record = world_record(site)
    assert (rank_record["groups"], rank_record["ended"], rank_record[EXIT_STATUS]) == ([], True, None)
    assert spawned_records(site) == [{"rank": 1, "groups": [{"backend": "gloo", "world_size": 4, "rank": 1}], "spawned": True}]


def test_a_process_outside_any_rank_wrapper_records_nothing(site: dict[str, Path]) -> None:
    result = run_script(site, TRAIN.format(backend="gloo"), env={"RANK": "1"})
    assert result.returncode == 0, result.stderr
    assert not list((site["root"] / "status").iterdir())


def test_a_world_that_cannot_be_recorded_is_said_and_changes_nothing(site: dict[str, Path]) -> None:
    (site["root"] / "status").rmdir()
    result = run_rank(site, TRAIN.format(backend="gloo") + "raise SystemExit(4)\n")
    assert result.returncode == 4
    assert "could not record the rank's world" in result.stderr


def test_the_guard_and_the_wrapper_name_the_wrapper_pid_alike() -> None:
    assert rank_exit_guard.WRAPPER_PID_VARIABLE == rank_contract.WRAPPER_PID_VARIABLE


def test_workers_that_end_a_moment_after_their_group_are_not_taken_for_held(tmp_path: Path) -> None:
    """A released group's workers end on their own schedule (later on a loaded machine): the guard waits for them."""
    (tmp_path / "9").mkdir()
    (tmp_path / "9" / "comm").write_text("pt_gloo_runloop\n")
    ending = threading.Timer(0.1, shutil.rmtree, args=(tmp_path / "9",))
    ending.start()
    started = time.monotonic()
    assert not gloo_workers_remain(str(tmp_path), 60.0)
    assert time.monotonic() - started < 20.0, "answered as soon as the worker was gone"
    ending.join()


def test_workers_still_there_after_the_wait_are_held(tmp_path: Path) -> None:
    (tmp_path / "9").mkdir()
    (tmp_path / "9" / "comm").write_text("pt_gloo_runloop\n")
    started = time.monotonic()
    assert gloo_workers_remain(str(tmp_path), 0.1)
    assert time.monotonic() - started >= 0.1
