"""Scan every process's command line every 2 s for a secret until a stop file appears; write what held it.

The simulated nodes' processes (workers, launchers, ranks) are this machine's too, so one scan of /proc covers the
controller and every node. The secret is read from a file, never from this scanner's own command line:

    python3 scan_cmdlines.py SECRET_FILE STOP_FILE RESULT_FILE

RESULT_FILE gets {"scans": n, "hits": [command lines, the secret masked]}.
"""

import json
import os
import sys
import time


def holding(secret: bytes) -> set[str]:
    """The command lines of the processes running now that hold ``secret``, with it masked."""
    found = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                words = handle.read()
        except OSError:
            continue
        if secret in words:
            found.add(words.replace(secret, b"***").replace(b"\0", b" ").decode(errors="replace"))
    return found


def main(secret_file: str, stop_file: str, result_file: str) -> None:
    with open(secret_file, "rb") as handle:
        secret = handle.read().strip()
    hits: set[str] = set()
    scans = 0
    while not os.path.exists(stop_file):
        hits |= holding(secret)
        scans += 1
        time.sleep(2)
    # Whole or not at all (a temporary file renamed): whoever waits for the file reads the result complete.
    with open(f"{result_file}.tmp", "w", encoding="utf-8") as handle:
        json.dump({"scans": scans, "hits": sorted(hits)}, handle)
    os.replace(f"{result_file}.tmp", result_file)


if __name__ == "__main__":
    main(*sys.argv[1:4])
