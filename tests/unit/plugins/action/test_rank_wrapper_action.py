# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rank_wrapper action's check of O(sync) as a task gives it, before anything is listed or run."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.multinode.training.plugins.action.rank_wrapper import _validated_sync

TREE = {"src": "/home/me/code", "dest": "/opt/work/code"}


@pytest.mark.parametrize(
    ("sync", "message"),
    [
        ([TREE], "sync: a dict of trees, directories, owner and group is expected, not list"),
        ("trees", "sync: a dict of trees, directories, owner and group is expected, not str"),
        ({"trees": [{"dest": "/opt/work/code"}], "owner": 1000, "group": 1000}, "missing required arguments: src found in trees"),
    ],
    ids=["a list", "a string", "a tree without src"],
)
def test_a_bad_sync_is_refused_naming_what_is_wrong(sync: object, message: str) -> None:
    with pytest.raises(AnsibleActionFail, match="^sync: ") as refused:
        _validated_sync(sync)
    assert message in str(refused.value)


def test_a_good_sync_is_returned_with_its_defaults() -> None:
    assert _validated_sync({"trees": [TREE], "owner": "1000", "group": 1001}) == {
        "trees": [TREE],
        "directories": [],
        "owner": 1000,
        "group": 1001,
    }
