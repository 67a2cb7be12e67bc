# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""multinode.training.phase_stats for every run of these playbooks, with no configuration.

Ansible loads callback plugins found next to a playbook, and those that do not need enabling run
without ``callbacks_enabled``: the run summary's ``provision_changed`` and ``phases.provision``
come out right from an installed collection, from ansible-runner and from molecule alike.
"""

from __future__ import annotations

from ansible_collections.multinode.training.plugins.callback.phase_stats import CallbackModule as PhaseStats


class CallbackModule(PhaseStats):
    CALLBACK_NAME = "multinode_phase_stats"
    CALLBACK_NEEDS_ENABLED = False
