"""The job_wait action validates its arguments with ARGUMENT_SPEC; its documentation must say the same."""

from __future__ import annotations

import yaml

from ansible_collections.multinode.training.plugins.action.job_wait import ARGUMENT_SPEC
from ansible_collections.multinode.training.plugins.modules import job_wait


def test_documented_options_are_the_argument_spec() -> None:
    documented = yaml.safe_load(job_wait.DOCUMENTATION)["options"]
    assert set(documented) == set(ARGUMENT_SPEC)
    for name, spec in ARGUMENT_SPEC.items():
        option = documented[name]
        assert option["type"] == spec["type"], name
        assert option.get("required", False) == spec.get("required", False), name
        assert option.get("default") == spec.get("default"), name
