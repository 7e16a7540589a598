"""wandb's writer framing, written here independently of the reader under test: the W&B header,
then LevelDB log chunks (32 KiB blocks, 7-byte headers: IEEE CRC-32 of type + data, length,
type FULL/FIRST/MIDDLE/LAST; a block tail shorter than a header is zero padding)."""

from __future__ import annotations

import struct
import zlib

HEADER = b":W&B" + (0xBEE1).to_bytes(2, "little") + b"\x00"
BLOCK, CHUNK_HEADER = 32 * 1024, 7


def frame_log(records: list[bytes]) -> bytes:
    """The bytes of a `.wandb` file holding `records` (serialized Record messages), in order."""
    out = bytearray(HEADER)
    for rec in records:
        first = True
        while True:
            left = BLOCK - len(out) % BLOCK
            if left < CHUNK_HEADER:
                out += bytes(left)
                continue
            piece, rec = rec[: left - CHUNK_HEADER], rec[left - CHUNK_HEADER:]
            kind = (1 if not rec else 2) if first else (4 if not rec else 3)
            out += struct.pack("<IHB", zlib.crc32(bytes([kind]) + piece), len(piece), kind) + piece
            first = False
            if not rec:
                break
    return bytes(out)
