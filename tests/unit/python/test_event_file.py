"""TensorBoard's record format as event_file.py writes it: the checksum's known values and a record's layout (the
files themselves are read back with tensorboard's own reader in test_trackers.py)."""

from __future__ import annotations

import io
import struct

from multinode_training.event_file import crc32c, masked_crc32c, write_record


def test_crc32c_of_the_standard_check_string() -> None:
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0


def test_the_mask_rotates_and_adds_the_constant() -> None:
    crc = crc32c(b"abc")
    assert masked_crc32c(b"abc") == ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def test_a_record_is_its_length_the_data_and_their_checksums() -> None:
    file = io.BytesIO()
    write_record(file, b"event")
    record = file.getvalue()
    length = struct.pack("<Q", 5)
    assert record == length + struct.pack("<I", masked_crc32c(length)) + b"event" + struct.pack("<I", masked_crc32c(b"event"))
