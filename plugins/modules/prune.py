#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: prune
short_description: Keep only the newest runs in a directory of runs
description:
  - Removes the subdirectories of O(path) beyond the newest O(keep), newest by modification time. Job directories
    on the nodes (C(<workdir>/jobs)) and the controller's C(runs/) are pruned this way.
  - Names in O(protect) (the run in progress) are never removed and count towards O(keep). Symbolic links (such as
    C(runs/latest)) and files are left alone.
author:
  - multinode.training team (@multinode-training)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  path:
    description: Directory holding one subdirectory per run. Nothing happens when it does not exist.
    type: path
    required: true
  keep:
    description: How many of the newest runs to keep; C(0) keeps all.
    type: int
    required: true
  protect:
    description: Names of subdirectories never to remove.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Keep the last 5 job directories on every node
  multinode.training.prune:
    path: /opt/multinode/sim/work/jobs
    keep: 5
    protect: ["{{ launcher_job.id }}"]
"""

RETURN = r"""
removed:
  description: Names of the removed subdirectories (in check mode, those that would be removed).
  returned: always
  type: list
  elements: str
  sample: ["20261123-101500-torchrun"]
kept:
  description: How many run directories are left.
  returned: always
  type: int
  sample: 5
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.multinode.training.plugins.module_utils import prune


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            keep=dict(type="int", required=True),
            protect=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    path, keep = module.params["path"], module.params["keep"]
    if error := prune.keep_error(keep):
        module.fail_json(msg=error)
    removed, kept = prune.prune(path, keep, frozenset(module.params["protect"]), dry_run=module.check_mode)
    module.exit_json(changed=bool(removed), removed=removed, kept=kept)


if __name__ == "__main__":
    main()
