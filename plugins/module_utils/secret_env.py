# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which job environment variables hold secrets, and the records that show a job's settings with them masked.

A variable's name looks secret when one of its parts (the name split at ``_``, compared without regard to case) is
one of SECRET_WORDS or ends with one, plural or not: ``HF_TOKEN``, ``WANDB_API_KEY``, ``AWS_SECRET_ACCESS_KEY``,
``MLFLOW_TRACKING_PASSWORD``, ``DB_PASS``, ``MYSQL_PWD``, ``GITHUB_PAT``, ``BASIC_AUTH``, ``AWS_CREDS``,
``GOOGLE_APPLICATION_CREDENTIALS``, ``APIKEY``, ``hfToken``. A word inside a part is not enough:
``TOKENIZERS_PARALLELISM``, ``KEYBOARD``, ``AUTHOR``, ``PYTHONPATH``, ``KMP_BLOCKTIME``, ``MASTER_PORT`` and
``CCL_KVS_IFACE`` are shown. A part that only ends like a word is masked (``MONKEY``, ``BYPASS``): a value hidden for
nothing costs less than a secret shown. Names a user adds (the launcher role's ``launcher_secret_env_names``) are
secret whole, whatever their parts. Whatever its name, a variable whose value holds a URL with a password in it
(``scheme://user:password@host``: a proxy's, a database's, a tracking server's) is secret too.

Wherever a record holds an environment (a mapping under a key ``env`` or ending in ``_env``, or Kubernetes' list of
``{name, value}`` under such a key), :func:`masked` shows each secret value as MASK and the name as it is; given the
values themselves (:func:`secret_values`), it masks them in any text of the record too (a message, a log line).

Imports nothing else of the collection: the multinode-training package loads it from its file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"
SECRET_WORDS = (
    "TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "PASS", "PWD", "PASSPHRASE", "CREDENTIAL", "CRED", "AUTH", "PAT",
)
# A URL whose user information holds a password: scheme://user:password@host (the user may be empty).
_URL_WITH_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*:[^\s/@]+@")
# Shorter values are masked where their variable is shown, but not searched for in free text (a log line): a
# three-letter "secret" would hide every word it is part of, and guards nothing.
SHORTEST_SEARCHED = 4


def secret_name(name: str, added: Iterable[str] = ()) -> bool:
    """Whether the environment variable ``name`` looks secret (the module's rule), or is one of ``added``."""
    upper = name.upper()
    if upper in {str(extra).upper() for extra in added}:
        return True
    return any(part.endswith(word) or part.endswith(f"{word}S") for part in upper.split("_") for word in SECRET_WORDS)


def secret_variable(name: str, value: Any, added: Iterable[str] = ()) -> bool:
    """Whether the variable ``name`` with ``value`` is secret: its name looks secret (:func:`secret_name`), or its
    value holds a URL with a password in it."""
    return secret_name(name, added) or bool(_URL_WITH_PASSWORD.search(str(value)))


def secret_entries(env: Mapping[Any, Any], added: Iterable[str] = ()) -> dict[str, str]:
    """The secret variables of ``env`` (:func:`secret_variable`), as strings."""
    return split_env(env, added)[1]


def split_env(env: Mapping[Any, Any], added: Iterable[str] = ()) -> tuple[dict[str, str], dict[str, str]]:
    """``env`` as strings, split into the variables that may be shown and the secret ones (:func:`secret_variable`:
    names that look secret or are ``added``, values holding a URL with a password)."""
    added = tuple(added)
    shown: dict[str, str] = {}
    secret: dict[str, str] = {}
    for name, value in env.items():
        (secret if secret_variable(str(name), value, added) else shown)[str(name)] = str(value)
    return shown, secret


def env_key(key: Any) -> bool:
    """Whether a record's ``key`` names an environment (``env``, ``launcher_env``, ...)."""
    return isinstance(key, str) and (key == "env" or key.endswith("_env"))


def masked_env(env: Any, added: Iterable[str] = ()) -> Any:
    """``env`` with the value of each secret name as MASK: a mapping of names to values, or a list of
    ``{name, value}`` mappings (a Kubernetes container's); anything else as it is."""
    added = tuple(added)
    if isinstance(env, Mapping):
        return {name: MASK if secret_variable(str(name), value, added) else value for name, value in env.items()}
    if isinstance(env, list):
        return [
            {**entry, "value": MASK}
            if isinstance(entry, Mapping) and "value" in entry and secret_variable(str(entry.get("name", "")), entry["value"], added)
            else entry
            for entry in env
        ]
    return env


def masked(record: Any, added: Iterable[str] = (), values: Iterable[str] = ()) -> Any:
    """A copy of ``record`` (mappings, lists and plain values) with every environment in it masked, and each of
    ``values`` (secret_values') in any text of it as MASK."""
    added, values = tuple(added), tuple(values)
    if isinstance(record, Mapping):
        return {
            key: masked(masked_env(value, added) if env_key(key) else value, added, values)
            for key, value in record.items()
        }
    if isinstance(record, (list, tuple)):
        return [masked(item, added, values) for item in record]
    return masked_text(record, values) if isinstance(record, str) else record


def secret_values(record: Any, added: Iterable[str] = ()) -> list[str]:
    """The values :func:`masked` hides in ``record`` that are long enough to search for in free text, longest
    first (a value inside another is masked after it)."""
    added = tuple(added)
    found: set[str] = set()
    if isinstance(record, Mapping):
        for key, value in record.items():
            if env_key(key):
                found.update(str(shown) for name, shown in _entries(value) if secret_variable(name, shown, added) and shown != MASK)
            found.update(secret_values(value, added))
    elif isinstance(record, (list, tuple)):
        for item in record:
            found.update(secret_values(item, added))
    return sorted((value for value in found if len(value) >= SHORTEST_SEARCHED), key=lambda value: (-len(value), value))


def _entries(env: Any) -> list[tuple[str, Any]]:
    """The names and values of an environment, in either shape masked_env takes."""
    if isinstance(env, Mapping):
        return [(str(name), value) for name, value in env.items()]
    if isinstance(env, list):
        return [(str(entry.get("name", "")), entry["value"]) for entry in env if isinstance(entry, Mapping) and "value" in entry]
    return []


def masked_text(text: str, values: Iterable[str]) -> str:
    """``text`` with each of ``values`` (secret_values') as MASK."""
    for value in values:
        text = text.replace(value, MASK)
    return text
