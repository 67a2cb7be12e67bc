#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

# The work is done by the action plugin plugins/action/mirror.py; this file documents it.

from __future__ import annotations

DOCUMENTATION = r"""
module: mirror
short_description: Make node directories mirrors of controller directories, in one round trip when nothing changed
description:
  - Lists each controller directory of O(trees) (sizes and modification times; no file is read), and has
    multinode.training.mirror_files compare the node's copy, remove what the controller no longer has and fix owners
    and modes. The files that differ (missing, or another size or modification time, as rsync's quick check) are
    then sent in one tar archive per directory and unpacked with the controller's modification times. A file of the
    same size but another modification time is compared by content first (SHA-256 on both sides) and sent only when
    it differs, so the same tree from another checkout sends nothing.
  - Symbolic links on the controller are followed (their targets are copied); only regular files are mirrored.
author:
  - multinode.training team (@multinode-training)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: In check mode nothing is sent or changed; RV(trees) says what would be.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  trees:
    description: The directories to mirror.
    type: list
    elements: dict
    required: true
    suboptions:
      src:
        description: The directory on the controller.
        type: path
        required: true
      dest:
        description: The directory on the node (created with its parents when missing).
        type: path
        required: true
  directories:
    description: More directories to create on the node, with the same owner and mode (V(0750)).
    type: list
    elements: path
    default: []
  owner:
    description: Numeric uid of every file and directory on the node.
    type: int
    required: true
  group:
    description: Numeric gid of every file and directory on the node.
    type: int
    required: true
notes:
  - Files are V(0640), or V(0750) when the controller's file is executable by anyone; directories V(0750).
  - The files to send are packed into a tar archive in the controller's temporary directory, and it is put in the
    node's before unpacking, so both need room for them (the whole tree on a first sync of a large data set); a
    data set that large is better shared (the workload role's C(workload_data_path)).
"""

EXAMPLES = r"""
- name: Sync the training code and create the jobs directory
  multinode.training.mirror:
    trees:
      - src: ~/my-model/
        dest: /opt/multinode/work/code
    directories: [/opt/multinode/work/jobs]
    owner: 1000
    group: 1000
"""

RETURN = r"""
trees:
  description:
    - By O(trees[].dest), the files sent (C(written); in check mode C(to_send)), C(removed) and C(fixed) (owner or
      mode put right), and in C(to_verify) the node's files of the same size but another modification time, each with
      its SHA-256 (those whose content differs were sent).
  returned: always
  type: dict
  sample:
    /opt/multinode/work/code:
      to_send: []
      to_verify: {}
      written: [train.py]
      removed: []
      fixed: []
created:
  description: The directories created on the node.
  returned: always
  type: list
  elements: str
  sample: [/opt/multinode/work/code]
"""
