# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every summary.json is written by write_summary (plugins/module_utils/summary_file.py), which holds it to the run
schema as it writes: no task and no Python code of the collection writes one any other way.

What is searched: the tasks of every YAML file under roles/, playbooks/ and plugins/ (the modules' and filters'
EXAMPLES too) for a module other than multinode.training.write_summary given a ``dest`` or ``path`` that is a
summary.json; and every Python function (or module body) there that names the summary file (``SUMMARY_FILE`` or
``"summary.json"``) and writes, copies or moves a file. Only summary_file.py itself may do both.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
SEARCHED = ("roles", "playbooks", "plugins")
SUMMARY = "summary.json"
WRITER_MODULE = "multinode.training.write_summary"
WRITER_FILE = REPO / "plugins/module_utils/summary_file.py"
PATH_OPTIONS = ("dest", "path")
# Calls that write, copy or move a file over another (open() is judged by its mode).
WRITING_CALLS = frozenset(
    {"write_json", "write_text", "write_bytes", "dump", "copy", "copy2", "copyfile", "move", "replace", "rename"}
)


def searched_files(suffixes: tuple[str, ...]) -> list[Path]:
    return sorted(path for top in SEARCHED for path in (REPO / top).rglob("*") if path.suffix in suffixes)


# --------------------------------------------------------------------------- tasks


def tasks_writing_a_summary(document: Any) -> Iterator[str]:
    """The modules of the tasks in a parsed YAML document that are given a summary.json to write."""
    if isinstance(document, dict):
        for key, value in document.items():
            if isinstance(value, dict) and key != WRITER_MODULE:
                if any(SUMMARY in str(value.get(option, "")) for option in PATH_OPTIONS):
                    yield key
            yield from tasks_writing_a_summary(value)
    elif isinstance(document, list):
        for item in document:
            yield from tasks_writing_a_summary(item)


def python_examples(path: Path) -> list[str]:
    """The EXAMPLES of a module's documentation."""
    return [
        node.value.value
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.Assign)
        and [getattr(target, "id", "") for target in node.targets] == ["EXAMPLES"]
        and isinstance(node.value, ast.Constant)
    ]


def yaml_documents(path: Path) -> Iterator[Any]:
    """A YAML file's documents, and the tasks of its EXAMPLES (a plugin's documentation)."""
    for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
        yield document
        if isinstance(document, dict) and isinstance(document.get("EXAMPLES"), str):
            yield yaml.safe_load(document["EXAMPLES"])


def task_offenders() -> list[str]:
    found = []
    for path in searched_files((".yml", ".yaml")):
        for document in yaml_documents(path):
            found += [f"{path.relative_to(REPO)}: {module}" for module in tasks_writing_a_summary(document)]
    for path in searched_files((".py",)):
        for examples in python_examples(path):
            found += [f"{path.relative_to(REPO)} EXAMPLES: {module}" for module in tasks_writing_a_summary(yaml.safe_load(examples))]
    return found


# --------------------------------------------------------------------------- Python


def _called(call: ast.Call) -> str:
    return getattr(call.func, "attr", "") or getattr(call.func, "id", "")


def _writes(call: ast.Call) -> bool:
    name = _called(call)
    if name == "open":
        modes = [*call.args[1:2], *(keyword.value for keyword in call.keywords if keyword.arg == "mode")]
        return any(isinstance(mode, ast.Constant) and set(str(mode.value)) & set("wax+") for mode in modes)
    return name in WRITING_CALLS


def writes_a_summary(scope: list[ast.stmt]) -> bool:
    """Whether the statements (a function's, or a module's outside its functions and classes) name the summary file
    and write a file; docstrings are not names."""
    nodes = [node for statement in scope for node in ast.walk(statement)]
    docstrings = {id(node.value) for node in nodes if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    names = any(
        (isinstance(node, ast.Name) and node.id == "SUMMARY_FILE")
        or (isinstance(node, ast.Attribute) and node.attr == "SUMMARY_FILE")
        or (isinstance(node, ast.Constant) and id(node) not in docstrings and SUMMARY in str(node.value))
        for node in nodes
    )
    return names and any(isinstance(node, ast.Call) and _writes(node) for node in nodes)


def python_offenders_in(source: str) -> list[str]:
    """The functions of ``source`` (``<module>`` for its body) that write a summary."""
    tree = ast.parse(source)
    functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    body = [node for node in tree.body if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    found = [function.name for function in functions if writes_a_summary(function.body)]
    return found + (["<module>"] if writes_a_summary(body) else [])


def python_offenders() -> list[str]:
    return [
        f"{path.relative_to(REPO)}: {function}"
        for path in searched_files((".py",))
        if path != WRITER_FILE
        for function in python_offenders_in(path.read_text(encoding="utf-8"))
    ]


# --------------------------------------------------------------------------- the tests


def test_no_task_writes_a_summary_but_through_write_summary() -> None:
    assert task_offenders() == []


def test_no_python_code_writes_a_summary_but_write_summary() -> None:
    assert python_offenders() == []


def test_the_writer_itself_is_where_the_search_expects_it() -> None:
    assert python_offenders_in(WRITER_FILE.read_text(encoding="utf-8")) == []
    assert "def write_summary(" in WRITER_FILE.read_text(encoding="utf-8")


# The search finds the writers there were before write_summary, and lets the readers be.
OLD_TASK = """
- name: Write the run summary
  ansible.builtin.copy:
    content: "{{ launcher_summary.summary | ansible.builtin.to_nice_json(indent=2) }}\\n"
    dest: "{{ launcher_job.run_dir }}/summary.json"
    mode: "0600"
- ansible.builtin.template: {src: summary.j2, dest: "{{ run_dir ~ '/summary.json' }}"}
- ansible.builtin.file: {path: "{{ run_dir }}/summary.json", state: touch, mode: "0600"}
"""
NEW_TASK = """
- name: Write the run summary
  multinode.training.write_summary: {run_dir: "{{ launcher_job.run_dir }}", summary: "{{ launcher_summary.summary }}"}
- ansible.builtin.slurp: {src: "{{ run_dir }}/summary.json"}
"""
OLD_PYTHON = '''
def run(run_dir, summary):
    path = run_dir / SUMMARY_FILE
    write_json(path, summary)

def dumped(run_dir, summary):
    with open(os.path.join(run_dir, "summary.json"), mode="w") as handle:
        json.dump(summary, handle)

(RUN / SUMMARY_FILE).write_text("{}")
'''
READER = '''
def read(run_dir):
    """Reads summary.json and writes the report."""
    summary = json.loads((run_dir / SUMMARY_FILE).read_text())
    with open(run_dir / SUMMARY_FILE) as handle:
        json.load(handle)
    write_summary(run_dir / SUMMARY_FILE, summary)

def report(run_dir):
    """Writes report.html from summary.json."""
    (run_dir / "report.html").write_text("...")
'''


def test_the_search_finds_the_old_ways_of_writing_a_summary() -> None:
    assert list(tasks_writing_a_summary(yaml.safe_load(OLD_TASK))) == [
        "ansible.builtin.copy", "ansible.builtin.template", "ansible.builtin.file"
    ]
    assert python_offenders_in(OLD_PYTHON) == ["run", "dumped", "<module>"]


def test_the_search_lets_write_summary_and_the_readers_be() -> None:
    assert list(tasks_writing_a_summary(yaml.safe_load(NEW_TASK))) == []
    assert python_offenders_in(READER) == []
