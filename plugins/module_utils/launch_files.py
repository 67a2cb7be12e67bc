# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A job's launch on its launcher node: the launch script and the hostfile written, and with the container runtime
the launcher container that runs the script started.

The launch_script module does this alone. The rank_wrapper module does it on the launcher node in the same module run
as that node's job set-up (its ``launch`` option, validated here against the launch_script module's own options), so
a job starts one module run sooner; the launch script then waits on every node for that node's set-up of this launch
(``wait_ready``) before any rank starts.
"""

from __future__ import annotations

import inspect
import posixpath
from dataclasses import dataclass
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.multinode.training.plugins.module_utils import checkpoint_replica, docker_api, events
from ansible_collections.multinode.training.plugins.module_utils.files import ensure_content
from ansible_collections.multinode.training.plugins.module_utils.hostfile import (
    DIALECTS,
    HOSTS_ARGUMENT_SPEC,
    normalize_hosts,
    render_hostfile,
)
from ansible_collections.multinode.training.plugins.module_utils.launch import (
    DEEPSPEED_LAUNCHERS,
    HOROVOD_CONTROLLERS,
    IPEXRUN_LEGACY,
    LAUNCHERS,
    RDZV_BACKENDS,
    LaunchSpec,
    build,
    hostfile_dialect,
)
from ansible_collections.multinode.training.plugins.module_utils.launch_script import (
    ReadyCheck,
    Replication,
    render_launch_script,
)
from ansible_collections.multinode.training.plugins.module_utils.rank_contract import PLACEHOLDERS, expand_placeholders
from ansible_collections.multinode.training.plugins.module_utils.secret_env import split_env

HOSTFILE_MODE = "0640"
# The checkpoint replicator (checkpoint_replica.py), beside the launch script in the job directory.
REPLICATOR_FILE = "replicate.py"
CONTAINER_OPTIONS = dict(
    name=dict(type="str", required=True),
    image=dict(type="str", required=True),
    command=dict(type="list", elements="str", required=True),
    user=dict(type="str", default=""),
    working_dir=dict(type="str", default=""),
    volumes=dict(type="list", elements="str", default=[]),
    devices=dict(type="list", elements="path", default=[]),
    groups=dict(type="list", elements="str", default=[]),
    labels=dict(type="dict", default={}),
    docker_socket=dict(type="path", default="/var/run/docker.sock"),
)

# LaunchSpec's fields, as module options with the dataclass's defaults.
SPEC_OPTIONS = dict(
    launcher=dict(type="str", required=True, choices=list(LAUNCHERS)),
    hosts=HOSTS_ARGUMENT_SPEC,
    launcher_address=dict(type="str", required=True),
    iface=dict(type="str", required=True),
    hostfile_path=dict(type="str", required=True),
    ssh_port=dict(type="int", required=True),
    job_id=dict(type="str", required=True),
    command=dict(type="list", elements="str", required=True),
    omp_num_threads=dict(type="int", required=True),
    env=dict(type="dict", default={}),
    rdzv=dict(type="str", choices=list(RDZV_BACKENDS), default="c10d"),
    rdzv_port=dict(type="int", default=29400),
    master_port=dict(type="int", default=29500),
    elastic_min=dict(type="int"),
    elastic_max=dict(type="int"),
    max_restarts=dict(type="int", default=0),
    ipex_version=dict(type="str", default="2.8"),
    horovod_controller=dict(type="str", choices=list(HOROVOD_CONTROLLERS), default="gloo"),
    deepspeed_launcher=dict(type="str", choices=list(DEEPSPEED_LAUNCHERS), default="pdsh"),
)

# The launch_script module's options (beside the file attributes).
LAUNCH_OPTIONS = dict(
    path=dict(type="path", required=True),
    job_dir=dict(type="path", required=True),
    work_dir=dict(type="path", required=True),
    env_script=dict(type="path", default=""),
    stage_paths=dict(type="list", elements="path", default=[]),
    replicate_dir=dict(type="path", default=""),
    replicas=dict(type="int", default=0),
    placeholders=dict(type="dict", default={}),
    hostfile_dialect=dict(type="str", choices=["auto", *DIALECTS]),
    container=dict(type="dict", options=CONTAINER_OPTIONS),
    wait_ready=dict(type="bool", default=False),
    ready_timeout=dict(type="int", default=60),
    secret_env_names=dict(type="list", elements="str", default=[], no_log=False),
    **SPEC_OPTIONS,
)


def launch_spec(params: dict[str, Any]) -> LaunchSpec:
    """The LaunchSpec the launch options describe; ValueError (HostfileError) if a host or placeholder is invalid."""
    values = {name: params[name] for name in SPEC_OPTIONS}
    values["hosts"] = normalize_hosts(params["hosts"])
    # A secret variable reaches the ranks through each node's rank.sh (its secret env file), never a launcher's words.
    values["env"] = split_env(params["env"], params["secret_env_names"])[0]
    unknown = sorted(set(params["placeholders"]) - set(PLACEHOLDERS))
    if unknown:
        raise ValueError(f"unknown placeholders {', '.join(unknown)}; known: {', '.join(PLACEHOLDERS)}")
    placeholders = {name: str(params["placeholders"].get(name, "")) for name in PLACEHOLDERS}
    values["command"] = expand_placeholders(params["command"], placeholders)
    return LaunchSpec(**values)


def hide_secret_values(module: AnsibleModule, env: dict[str, Any], names: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """``env`` split into the variables that may be shown and the secret ones (secret_env's rule and ``names``),
    whose values Ansible then masks wherever the module's result or arguments are shown."""
    shown, secret = split_env(env, names)
    module.no_log_values.update(value for value in secret.values() if value)
    return shown, secret


def validated_launch_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` checked against the launch_script module's options, with their defaults; ValueError naming what is
    wrong."""
    result = ArgumentSpecValidator(LAUNCH_OPTIONS).validate(options)
    if result.error_messages:
        raise ValueError("; ".join(result.error_messages))
    return result.validated_parameters


def ready_check(params: dict[str, Any]) -> ReadyCheck | None:
    """What the launch script waits for on every node before any rank starts: that node's set-up of this launch."""
    if not params["wait_ready"]:
        return None
    return ReadyCheck(path=f"{params['job_dir']}/{events.READY_FILE}", timeout=params["ready_timeout"])


def replication(params: dict[str, Any]) -> Replication | None:
    """The checkpoint replicas the launch makes: ``replicas`` nodes after the launcher node get each complete entry of
    ``replicate_dir`` (none without either); ValueError for a negative count."""
    if params["replicas"] < 0:
        raise ValueError(f"replicas must be 0 or more, not {params['replicas']}")
    if not params["replicate_dir"] or params["replicas"] == 0:
        return None
    return Replication(params["replicate_dir"], params["replicas"], posixpath.join(params["job_dir"], REPLICATOR_FILE))


@dataclass(frozen=True)
class RenderedLaunch:
    """What a launch writes, rendered before anything is written: the launch script, its command lines and the
    hostfile (none for a launcher without one) in its dialect."""

    content: str
    argvs: list[list[str]]
    hostfile: str | None
    dialect: str | None


def render_launch(params: dict[str, Any]) -> RenderedLaunch:
    """The launch script and hostfile that ``params`` (the launch options) describe; ValueError (LaunchError and
    HostfileError included) when they describe no valid launch."""
    spec = launch_spec(params)
    content = render_launch_script(
        spec,
        job_dir=params["job_dir"],
        work_dir=params["work_dir"],
        env_script=params["env_script"],
        stage_paths=params["stage_paths"],
        ready=ready_check(params),
        replication=replication(params),
    )
    dialect = hostfile_dialect(spec.launcher) if params["hostfile_dialect"] == "auto" else params["hostfile_dialect"]
    hostfile = render_hostfile(spec.hosts, dialect) if dialect else None
    return RenderedLaunch(content=content, argvs=build(spec), hostfile=hostfile, dialect=dialect)


def launch(module: AnsibleModule, params: dict[str, Any], rendered: RenderedLaunch, file_args: dict[str, Any]) -> dict[str, Any]:
    """Write the rendered launch script and hostfile with the owner and mode of ``file_args`` (the module's
    parameters), and start the launcher container when ``params`` names one (not in check mode); the launch_script
    module's result."""
    if params["launcher"] == "ipexrun":
        module.warn(IPEXRUN_LEGACY)
    result = dict(path=params["path"], content=rendered.content, argvs=rendered.argvs)
    result.update(ensure_content(module, params["path"], rendered.content, {**file_args, "path": params["path"]}))
    if (replicas := replication(params)) is not None:
        replicator_args = {**file_args, "path": replicas.script, "mode": HOSTFILE_MODE}
        written = ensure_content(module, replicas.script, inspect.getsource(checkpoint_replica), replicator_args)
        result["changed"] = result["changed"] or written["changed"]
    if rendered.hostfile is not None:
        result.update(hostfile=rendered.hostfile, hostfile_dialect=rendered.dialect)
        hostfile_args = {**file_args, "path": params["hostfile_path"], "mode": HOSTFILE_MODE}
        written = ensure_content(module, params["hostfile_path"], rendered.hostfile, hostfile_args)
        result["changed"] = result["changed"] or written["changed"]
    if params["container"] and not module.check_mode:
        result.update(changed=True, container_id=start_container(module, params["container"]))
    return result


def start_container(module: AnsibleModule, container: dict[str, Any]) -> str:
    """Start the written script in its launcher container; its id."""
    config = docker_api.launcher_config(**{name: container[name] for name in CONTAINER_OPTIONS if name not in ("name", "docker_socket")})
    try:
        return docker_api.start_container(container["name"], config, container["docker_socket"])
    except OSError as exc:
        module.fail_json(msg=f"the launch script is written, but its container did not start: {exc}")
