# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""multinode.training.fast_start for every run of these playbooks, with no configuration.

Ansible loads callback plugins found next to a playbook, and those that do not need enabling run without
``callbacks_enabled``: every task of the collection's playbooks starts with the collection's plugins imported, and
each module's payload is built once, not once per run, from an installed collection, ansible-runner and molecule alike.
"""

from __future__ import annotations

from ansible_collections.multinode.training.plugins.callback.fast_start import CallbackModule as FastStart


class CallbackModule(FastStart):
    CALLBACK_NAME = "multinode_fast_start"
    CALLBACK_NEEDS_ENABLED = False
