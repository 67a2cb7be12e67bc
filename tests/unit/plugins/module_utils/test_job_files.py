"""A job's files on a node: set up before the job, selected and packed after it."""

from __future__ import annotations

import os
import tarfile
import time
from pathlib import Path

from ansible_collections.multinode.training.plugins.module_utils import job_files

UID, GID = os.getuid(), os.getgid()


def job_layout(tmp_path: Path) -> dict[str, Path]:
    job = tmp_path / "jobs" / "job-1"
    paths = {"job": job, "work": job / "work", "outputs": job / "outputs"}
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text("print('hi')\n")
    (code / "pkg").mkdir()
    (code / "pkg" / "util.py").write_text("X = 1\n")
    (code / "link.py").symlink_to("train.py")
    old = time.time() - 3600
    for path in (code / "train.py", code / "pkg" / "util.py"):
        os.utime(path, (old, old))
    job_files.make_directories([str(job), str(job / "logs"), str(job / "status"), str(paths["outputs"])], UID, GID)
    job_files.copy_tree(str(code), str(paths["work"]), UID, GID)
    (job / "rank.sh").write_text("#!/bin/bash\n")
    return paths


def test_make_directories_creates_only_what_is_missing(tmp_path: Path) -> None:
    existing = tmp_path / "a"
    existing.mkdir()
    created = job_files.make_directories([str(existing), str(tmp_path / "b" / "c")], UID, GID)
    assert created == [str(tmp_path / "b"), str(tmp_path / "b" / "c")]
    assert oct((tmp_path / "b" / "c").stat().st_mode & 0o777) == "0o750"
    assert oct((tmp_path / "b").stat().st_mode & 0o777) == "0o750", "a parent made on the way keeps the mode too"


def test_copy_tree_keeps_times_and_links_and_never_overwrites(tmp_path: Path) -> None:
    paths = job_layout(tmp_path)
    work = paths["work"]
    assert (work / "link.py").is_symlink()
    assert (work / "train.py").stat().st_mtime < time.time() - 1000
    (work / "train.py").write_text("changed\n")
    assert job_files.copy_tree(str(tmp_path / "code"), str(work), UID, GID) is False
    assert (work / "train.py").read_text() == "changed\n"


def test_job_files_on_a_worker_are_wrapper_logs_and_status(tmp_path: Path) -> None:
    paths = job_layout(tmp_path)
    job = paths["job"]
    (job / "logs" / "rank-1.log").write_text("x\n")
    (job / "status" / "rank-1.json").write_text("{}\n")
    (job / "hostfile").write_text("a\n")
    (paths["outputs"] / "model.pt").write_text("w")
    found = job_files.job_files(str(job), str(paths["work"]), str(paths["outputs"]), outputs=False, launcher=False)
    assert sorted(os.path.relpath(path, job) for path in found) == ["logs/rank-1.log", "rank.sh", "status/rank-1.json"]


def test_job_files_with_outputs_take_only_what_the_ranks_wrote(tmp_path: Path) -> None:
    paths = job_layout(tmp_path)
    job = paths["job"]
    for name in ("hostfile", "launch.sh"):
        (job / name).write_text("x\n")
    (paths["outputs"] / "model.pt").write_text("w")
    time.sleep(0.01)
    (paths["work"] / "model.pt").write_text("saved by the script\n")
    (paths["work"] / ".hidden").write_text("h\n")
    found = job_files.job_files(str(job), str(paths["work"]), str(paths["outputs"]), outputs=True, launcher=True)
    assert sorted(os.path.relpath(path, job) for path in found) == [
        "hostfile", "launch.sh", "outputs/model.pt", "rank.sh", "work/.hidden", "work/model.pt",
    ]


def test_pack_names_members_relative_to_the_job(tmp_path: Path) -> None:
    paths = job_layout(tmp_path)
    job = paths["job"]
    (job / "logs" / "rank-0.log").write_text("12345\n")
    archive = tmp_path / "collect.tar"
    size = job_files.pack(str(job), [str(job / "rank.sh"), str(job / "logs" / "rank-0.log")], str(archive))
    with tarfile.open(archive) as opened:
        assert opened.getnames() == ["rank.sh", "logs/rank-0.log"]
    assert size == len("#!/bin/bash\n") + len("12345\n")


def test_an_earlier_run_of_the_job_id_is_everything_but_the_checkpoints(tmp_path: Path) -> None:
    job = tmp_path / "job-1"
    for name in ("logs", "status", "work", "outputs", "checkpoints"):
        (job / name).mkdir(parents=True)
    (job / "launch.sh").write_text("#!/bin/bash\n")
    (job / "status" / "rank-2.json").write_text("{}\n")
    found = job_files.earlier_run(str(job), [str(job / "checkpoints")])
    assert found == [str(job / name) for name in ("launch.sh", "logs", "outputs", "status", "work")]
    job_files.remove_paths(found)
    assert [path.name for path in job.iterdir()] == ["checkpoints"]


def test_a_new_job_id_has_no_earlier_run(tmp_path: Path) -> None:
    assert job_files.earlier_run(str(tmp_path / "job-2"), []) == []


def test_an_earlier_attempt_is_its_logs_status_stop_and_process_ids_only(tmp_path: Path) -> None:
    job = tmp_path / "job-1"
    for name in ("logs", "status", "work", "outputs", "checkpoints"):
        (job / name).mkdir(parents=True)
    for name in ("stop", "launch.pid", "agent.pid", "slurm.jobid", "launch.sh", "hostfile", "rank.sh"):
        (job / name).write_text("x\n")
    (job / "logs" / "rank-0.log").write_text("epoch 1\n")
    (job / "checkpoints" / "epoch-1.pt").write_text("weights")
    found = job_files.earlier_attempt(str(job))
    assert found == [str(job / name) for name in ("logs", "status", "stop", "launch.pid", "agent.pid", "slurm.jobid")]
    job_files.remove_paths(found)
    assert sorted(path.name for path in job.iterdir()) == [
        "checkpoints", "hostfile", "launch.sh", "outputs", "rank.sh", "work",
    ]
    assert (job / "checkpoints" / "epoch-1.pt").read_text() == "weights"


def test_an_earlier_attempt_lists_only_what_exists(tmp_path: Path) -> None:
    job = tmp_path / "job-1"
    (job / "logs").mkdir(parents=True)
    (job / "work").mkdir()
    (job / "launch.pid").write_text("4242\n")
    assert job_files.earlier_attempt(str(job)) == [str(job / "logs"), str(job / "launch.pid")]


def test_an_earlier_attempt_counts_a_dangling_link_but_not_what_it_points_to(tmp_path: Path) -> None:
    job = tmp_path / "job-1"
    job.mkdir()
    (job / "stop").symlink_to(tmp_path / "gone")
    assert job_files.earlier_attempt(str(job)) == [str(job / "stop")]


def test_a_job_without_a_directory_has_no_earlier_attempt(tmp_path: Path) -> None:
    assert job_files.earlier_attempt(str(tmp_path / "job-2")) == []


def test_the_attempt_files_are_never_the_work_dir_outputs_or_checkpoints() -> None:
    assert job_files.ATTEMPT_FILES == ("logs", "status", "stop", "launch.pid", "agent.pid", "slurm.jobid")
    assert not {"work", "outputs", "checkpoints", "rank.sh", "launch.sh", "hostfile"} & set(job_files.ATTEMPT_FILES)


# ------------------------------------------------------------------------------------------ slow_launcher_end


def test_a_launcher_that_ended_late_is_said_to_have_waited_for_a_process_a_rank_left_behind() -> None:
    said = job_files.slow_launcher_end(41.6, still_running=False)
    assert said == (
        "the launcher container ended 42 s after this wait began: a process a rank left behind may have held the"
        " ranks' output open"
    )


def test_a_launcher_that_ended_soon_or_runs_still_gets_no_word() -> None:
    assert job_files.slow_launcher_end(job_files.SLOW_LAUNCHER_END_S, still_running=False) is None
    assert job_files.slow_launcher_end(120, still_running=True) is None
