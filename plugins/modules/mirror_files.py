#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: mirror_files
short_description: Bring node directories in line with a controller listing, or unpack the files they lack
description:
  - For each of O(trees), compares the node directory with the controller's listing by size and modification time
    (rsync's quick check), removes the files the listing does not have (and the directories that leaves empty), gives
    every file and directory the owner and mode it should have and returns the files to send in RV(trees), and the
    SHA-256 of each file of the same size but another modification time, for the controller to compare.
  - With O(archives) it unpacks those files, each with the listing's modification time, so the next comparison
    finds them equal.
  - The multinode.training.mirror action runs it (once when nothing changed, twice when files are sent); it is
    rarely useful alone.
author:
  - multinode.training team (@multinode-training)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: In check mode nothing is removed, fixed or unpacked; RV(trees) says what would be.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  trees:
    description: The node directories and the controller's listing of each.
    type: list
    elements: dict
    required: true
    suboptions:
      dest:
        description: The node directory (created with its parents when missing).
        type: path
        required: true
      files:
        description: The controller's files, by relative path, each a dict of C(size), C(mtime) (whole seconds)
          and C(executable).
        type: dict
        default: {}
  archives:
    description: A tar file on the node, by O(trees[].dest), holding files of that tree to unpack.
    type: dict
    default: {}
  directories:
    description: More directories to create, with the same owner and mode (V(0750)).
    type: list
    elements: path
    default: []
  owner:
    description: Numeric uid of every file and directory.
    type: int
    required: true
  group:
    description: Numeric gid of every file and directory.
    type: int
    required: true
notes:
  - Files are V(0640), or V(0750) when the controller's file is executable by anyone; directories V(0750).
"""

EXAMPLES = r"""
- name: Make /opt/work/code match a listing of the controller's files
  multinode.training.mirror_files:
    trees:
      - dest: /opt/work/code
        files:
          train.py: {size: 5120, mtime: 1795456157, executable: false}
    directories: [/opt/work/jobs]
    owner: 1000
    group: 1000
"""

RETURN = r"""
trees:
  description: By O(trees[].dest), what was done or is left to do.
  returned: always
  type: dict
  sample:
    /opt/work/code:
      to_send: [train.py]
      to_verify: {"README.md": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}
      removed: [old.py]
      fixed: []
      written: []
created:
  description: The directories created.
  returned: always
  type: list
  elements: str
  sample: [/opt/work/code]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.multinode.training.plugins.module_utils import mirror


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            trees=dict(
                type="list",
                elements="dict",
                required=True,
                options=dict(dest=dict(type="path", required=True), files=dict(type="dict", default={})),
            ),
            archives=dict(type="dict", default={}),
            directories=dict(type="list", elements="path", default=[]),
            owner=dict(type="int", required=True),
            group=dict(type="int", required=True),
        ),
        supports_check_mode=True,
    )
    try:
        result = mirror.mirror_trees(module.params, module.check_mode)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    except OSError as exc:
        module.fail_json(msg=f"cannot mirror into {', '.join(tree['dest'] for tree in module.params['trees'])}: {exc}")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
