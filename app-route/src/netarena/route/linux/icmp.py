"""ICMP echo packets shaped exactly as iputils ``ping`` sends them (84 bytes, its fields).

The payload is the current ``struct timeval`` then bytes 0x10, 0x11, ...; a filter that
lets these through lets an operator's ``ping`` through as well.
"""

from __future__ import annotations

import struct

__all__ = ["ECHO_REPLY", "ECHO_REQUEST", "PATTERN", "STAMP", "checksum", "echo_packet"]

ECHO_REQUEST, ECHO_REPLY = 8, 0

PATTERN = bytes(range(0x10, 0x38))  # ping's default fill after its 16-byte timestamp


STAMP = struct.Struct("<qq")  # struct timeval on a 64-bit machine, as ping writes it


def checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of ``data``."""
    if len(data) % 2:
        data += b"\0"
    total: int = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def echo_packet(kind: int, ident: int, seq: int, stamp: bytes) -> bytes:
    """An echo packet as ping builds it: header, 16-byte timestamp, fill pattern."""
    payload = stamp + PATTERN
    header = struct.pack("!BBHHH", kind, 0, 0, ident, seq)
    return struct.pack("!BBHHH", kind, 0, checksum(header + payload), ident, seq) + payload
