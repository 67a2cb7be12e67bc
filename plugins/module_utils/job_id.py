# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A job's id, the one formula: the launcher role (filter multinode.training.job_id, over SSH and on Kubernetes) and
the Python API (which loads this file from the collection it runs) name a job alike.

Pure Python without imports of the collection, so the API can load it by its path.
"""

from __future__ import annotations

import datetime


def job_id(given: str, name: str, launcher: str, now: datetime.datetime | None = None) -> str:
    """``given`` (launcher_job_id) when set, else the UTC time and the job's name, or its launcher without one
    (``20261127-141148-torchrun``, ``20261127-141148-mnist``)."""
    if given:
        return given
    moment = now or datetime.datetime.now(datetime.timezone.utc)
    return f"{moment:%Y%m%d-%H%M%S}-{name or launcher}"
