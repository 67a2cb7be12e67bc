# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of module_utils/secret_env.py: which names look secret, and records with their values masked."""

from __future__ import annotations

import json

import pytest

from ansible_collections.multinode.training.plugins.module_utils.secret_env import (
    MASK, masked, masked_env, masked_text, secret_name, secret_values, secret_variable, split_env,
)

SECRET = "s3cr3t-value"


@pytest.mark.parametrize(
    "name",
    [
        "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID",
        "MLFLOW_TRACKING_PASSWORD", "LDAP_PASSWD", "GOOGLE_APPLICATION_CREDENTIALS", "CLIENT_SECRET", "APIKEY",
        "hf_token", "hfToken", "SSH_KEYS", "GITHUB_TOKENS", "TOKEN", "MONKEY", "DB_PASS", "SMTP_PASSWORDS", "MYSQL_PWD",
        "GPG_PASSPHRASE", "AWS_CREDS", "GITHUB_PAT", "BASIC_AUTH", "OAUTH", "BYPASS",
    ],
)
def test_names_with_a_part_that_is_or_ends_with_a_secret_word_look_secret(name: str) -> None:
    assert secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "KMP_BLOCKTIME", "MASTER_PORT", "MASTER_ADDR", "CCL_KVS_IFACE", "TOKENIZERS_PARALLELISM", "KEYBOARD_LAYOUT",
        "OMP_NUM_THREADS", "I_MPI_PIN_DOMAIN", "CCL_WORKER_AFFINITY", "FI_PROVIDER", "PYTHONPATH", "HTTP_PROXY",
        "KMP_AFFINITY", "SECRETARY", "AUTHOR", "PATH", "LD_LIBRARY_PATH", "PASSING_GRADE", "",
    ],
)
def test_names_without_such_a_part_are_shown(name: str) -> None:
    assert not secret_name(name)


def test_names_a_user_adds_are_secret_whole_whatever_their_case() -> None:
    assert secret_name("RUN_NOTE", ["run_note"])
    assert not secret_name("RUN_NOTE_ID", ["RUN_NOTE"])


@pytest.mark.parametrize(
    "value",
    [
        "http://proxyuser:pr0xy-pw@proxy.example:3128", "postgresql://train:db-pw@db:5432/runs",
        "see https://:only-pw@tracking.example/api", "redis://default:r3dis@127.0.0.1:6379/0",
    ],
)
def test_a_value_holding_a_url_with_a_password_is_secret_whatever_its_name(value: str) -> None:
    assert secret_variable("HTTPS_PROXY", value)
    shown, secret = split_env({"HTTPS_PROXY": value, "MLFLOW_TRACKING_URI": "http://tracking.example:5000"})
    assert secret == {"HTTPS_PROXY": value}
    assert shown == {"MLFLOW_TRACKING_URI": "http://tracking.example:5000"}
    assert masked_env({"SERVICE": value}) == {"SERVICE": MASK}
    assert secret_values({"env": [{"name": "SERVICE", "value": value}]}) == [value]


@pytest.mark.parametrize(
    "value",
    ["http://proxy.example:3128", "https://user@git.example/repo.git", "user:pass", "a@b:c", "/data/x:y@z", "mailto:a@b"],
)
def test_a_value_without_a_password_in_a_url_is_shown(value: str) -> None:
    assert not secret_variable("SOME_SETTING", value)


def test_an_env_mapping_keeps_its_names_and_masks_only_the_secret_values() -> None:
    env = {"HF_TOKEN": SECRET, "KMP_BLOCKTIME": "1", "MY_NOTE": "x", "MASTER_PORT": 29500}
    assert masked_env(env, ["MY_NOTE"]) == {"HF_TOKEN": MASK, "KMP_BLOCKTIME": "1", "MY_NOTE": MASK, "MASTER_PORT": 29500}
    assert env["HF_TOKEN"] == SECRET, "the input is left as it was"


def test_a_kubernetes_env_list_masks_the_value_of_a_secret_name() -> None:
    env = [{"name": "HF_TOKEN", "value": SECRET}, {"name": "OMP_NUM_THREADS", "value": "4"}, {"name": "X"}]
    assert masked_env(env) == [{"name": "HF_TOKEN", "value": MASK}, {"name": "OMP_NUM_THREADS", "value": "4"}, {"name": "X"}]


def test_every_env_in_a_record_is_masked_wherever_it_is() -> None:
    record = {
        "settings": {"tuning": {"node1": {"env": {"HF_TOKEN": SECRET, "KMP_BLOCKTIME": "1"}, "slots": 2}}},
        "extra_vars": {"launcher_env": {"WANDB_API_KEY": SECRET}, "ansible_user": "train"},
        "manifests": [{"spec": {"containers": [{"env": [{"name": "HF_TOKEN", "value": SECRET}]}]}}],
        # Not an environment: a requirements layer's key is shown.
        "requirements": {"key": "abc123"},
    }
    shown = masked(record)
    assert SECRET not in json.dumps(shown)
    assert shown["settings"]["tuning"]["node1"] == {"env": {"HF_TOKEN": MASK, "KMP_BLOCKTIME": "1"}, "slots": 2}
    assert shown["extra_vars"] == {"launcher_env": {"WANDB_API_KEY": MASK}, "ansible_user": "train"}
    assert shown["requirements"] == {"key": "abc123"}
    assert masked(shown) == shown, "masking twice changes nothing"


def test_the_secret_values_of_a_record_are_found_for_free_text() -> None:
    record = {"tuning": {"a": {"env": {"HF_TOKEN": SECRET, "API_KEY": "abc", "KMP_BLOCKTIME": "1"}}},
              "env": [{"name": "PASSWORD", "value": "longer-" + SECRET}], "masked": {"env": {"TOKEN": MASK}}}
    values = secret_values(record)
    # Longest first; a value too short to search for is left out; a masked one is not a secret.
    assert values == ["longer-" + SECRET, SECRET]
    assert masked_text(f"HF_TOKEN={SECRET} and longer-{SECRET} abc", values) == f"HF_TOKEN={MASK} and {MASK} abc"


def test_the_secret_values_given_are_masked_in_any_text_of_a_record_too() -> None:
    record = {"res": {"msg": f"failed: HF_TOKEN={SECRET} refused", "ansible_facts": {"env": {"HF_TOKEN": SECRET}}},
              "stdout": [f"export HF_TOKEN={SECRET}", 3, None]}
    shown = masked(record, values=[SECRET])
    assert shown == {"res": {"msg": f"failed: HF_TOKEN={MASK} refused", "ansible_facts": {"env": {"HF_TOKEN": MASK}}},
                     "stdout": [f"export HF_TOKEN={MASK}", 3, None]}
