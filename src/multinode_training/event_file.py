"""TensorBoard's event file, written without tensorboard's writer: its record format (TFRecord: a length, the data,
each with a masked CRC-32C) around serialized ``Event`` protos. tensorboard's writer imports numpy and its summary
API, which took longer than writing a run's events."""

from __future__ import annotations

import socket
import struct
from pathlib import Path
from typing import BinaryIO

# The first event of every file, which says the format's version.
FILE_VERSION = "brain.Event:2"
CRC32C_POLYNOMIAL = 0x82F63B78  # Castagnoli, reflected
MASK_DELTA = 0xA282EAD8


def _crc32c_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ CRC32C_POLYNOMIAL if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


CRC32C_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = CRC32C_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """The record format's checksum: the CRC-32C rotated right by 15 bits plus a constant."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + MASK_DELTA) & 0xFFFFFFFF


def write_record(file: BinaryIO, data: bytes) -> None:
    """One record: its length (uint64) and that length's checksum, the data and its checksum, little-endian."""
    length = struct.pack("<Q", len(data))
    file.write(length + struct.pack("<I", masked_crc32c(length)) + data + struct.pack("<I", masked_crc32c(data)))


def event_file_path(directory: Path, wall_time: float) -> Path:
    """A new event file's name as TensorBoard looks for it (``events.out.tfevents.<time>.<host>``)."""
    return directory / f"events.out.tfevents.{int(wall_time):010d}.{socket.gethostname()}"
