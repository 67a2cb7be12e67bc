#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: stamp
short_description: Tell whether a marker file on the node records a value, and record it
version_added: 0.1.0
description:
  - A marker file holds one value, such as the checksum of the image tarball a node loaded or the digest of
    the requirements a virtualenv was built from, so that the expensive step runs again only when that value changes.
  - With O(state=query), reads the file and returns in RV(matches) whether its content, without surrounding
    whitespace, is O(value). Changes nothing, in check mode too.
  - With O(state=present), writes O(value) and a newline to the file, atomically, when its content is not exactly
    that, and gives it O(owner), O(group) and O(mode). Run it once the step the marker stands for has succeeded.
author:
  - multinode.training team (@multinode-training)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: In check mode O(state=present) writes nothing and reports whether it would.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  path:
    description: The marker file. With O(state=present) its directory must exist.
    type: path
    required: true
  value:
    description: The value to compare with or to record, such as a checksum. It must not be empty nor start or end with whitespace.
    type: str
    required: true
  state:
    description: C(query) compares, C(present) records.
    type: str
    choices: [query, present]
    default: query
  owner:
    description: Owner of the file (O(state=present)); left as it is when omitted.
    type: str
  group:
    description: Group of the file (O(state=present)); left as it is when omitted.
    type: str
  mode:
    description: Permissions of the file (O(state=present)), as an octal string such as V(0644).
    type: raw
    default: "0600"
"""

EXAMPLES = r"""
- name: Read which tarball this node loaded last
  multinode.training.stamp:
    path: /var/cache/multinode/training.sha256
    value: "{{ tarball_stat.stat.checksum }}"
  register: loaded

- name: Load the image only when the tarball changed
  when: not loaded.matches
  block:
    - name: Load the image
      community.docker.docker_image:
        name: training:latest
        source: load
        load_path: /var/cache/multinode/training.tar

    - name: Remember which tarball was loaded
      multinode.training.stamp:
        path: /var/cache/multinode/training.sha256
        value: "{{ tarball_stat.stat.checksum }}"
        state: present
        owner: root
        group: root
        mode: "0600"
"""

RETURN = r"""
matches:
  description: Whether the file existed and recorded O(value) before this task.
  returned: always
  type: bool
  sample: true
recorded:
  description: The value the file recorded before this task (its content without surrounding whitespace), null when there was no file.
  returned: always
  type: str
  sample: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.multinode.training.plugins.module_utils import stamp


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            value=dict(type="str", required=True),
            state=dict(type="str", choices=["query", "present"], default="query"),
            owner=dict(type="str"),
            group=dict(type="str"),
            mode=dict(type="raw", default="0600"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    path, value = params["path"], params["value"]
    if error := stamp.value_error(value):
        module.fail_json(msg=error)
    before, changed = None, False
    try:
        before = stamp.read_bytes(path)
        if params["state"] == "present":
            attributes = dict(owner=params["owner"], group=params["group"], mode=params["mode"])
            changed = stamp.ensure(module, path, value, attributes)
    except OSError as exc:
        module.fail_json(msg=f"{path}: {to_native(exc)}")
    module.exit_json(changed=changed, matches=stamp.matches(before, value), recorded=stamp.recorded(before))


if __name__ == "__main__":
    main()
