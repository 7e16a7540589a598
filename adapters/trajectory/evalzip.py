"""The members of an Inspect `.eval` log (a zip) that still read, each CRC-checked; damage costs
only the members it touches.

The zip's central directory names the members; each is read and checked against its CRC-32 (and
size). A member the directory points at wrongly (bytes inserted before it shift every offset) is
found again by its local file header. With the central directory itself lost (a cut tail, its end
record damaged) every member is found by scanning for local file headers (`PK\\x03\\x04`): each
candidate is decompressed and CRC-checked, so a signature that happens to sit inside compressed
data is never taken for a member. What does not read is recorded per member with its cause in the
user's words ("member CRC failed", "compressed data damaged", "member cut short", "local header
damaged"); no zipfile or zlib message reaches the user.

Standard library only (zipfile, zlib). Members found by their local headers alone are read when
stored or deflated (what Inspect writes); the directory reads the other methods.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
import zipfile
import zlib
from typing import Any

_LOCAL = b"PK\x03\x04"
_LOCAL_HEAD = struct.Struct("<4sHHHHHIIIHH")  # 30 bytes
_SCAN_HEAD = 1 << 16  # bytes of a file a sniff looks at for its first local headers
INSPECT_FIRST = ("_journal/start.json", "header.json", "samples/")


class MemberError(Exception):
    """A member that does not read: `cause` in the user's words."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause


def _zip_cause(exc: BaseException) -> str:
    text = str(exc).lower()
    if "crc" in text:
        return "member CRC failed"
    if isinstance(exc, zlib.error) or "decompress" in text or "invalid" in text:
        return "compressed data damaged"
    if isinstance(exc, EOFError) or "truncated" in text or "end of" in text:
        return "member cut short"
    if "magic" in text or "header" in text or "overlap" in text:
        return "local header damaged"
    return "member unreadable"


class EvalZip:
    """An `.eval` file's members: `names` (in the order the log holds them), `read(name)`."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.size = os.path.getsize(path)
        self._fh = open(path, "rb")  # noqa: SIM115 - closed by close()
        self.data: Any = (mmap.mmap(self._fh.fileno(), 0, access=mmap.ACCESS_READ)
                          if self.size else b"")
        self.directory_error: str | None = None  # why the central directory was not used
        self._zf: zipfile.ZipFile | None = None
        self._scanned: dict[str, list[int]] | None = None  # name → local header offsets
        try:
            self._zf = zipfile.ZipFile(path)
            self.names = list(dict.fromkeys(self._zf.namelist()))
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, struct.error) as exc:
            text = str(exc).lower()
            self.directory_error = ("the file ends before it: cut short"
                                    if "not a zip" in text or "eocd" in text else
                                    "its central directory is damaged")
            self.names = list(self._scan())
        self.damaged: dict[str, str] = {}  # member → cause, for members read and found damaged

    def close(self) -> None:
        if self._zf is not None:
            self._zf.close()
        if isinstance(self.data, mmap.mmap):
            self.data.close()
        self._fh.close()

    def __enter__(self) -> EvalZip:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- local headers -----------------------------------------------------------------------------
    def _scan(self) -> dict[str, list[int]]:
        if self._scanned is None:
            found: dict[str, list[int]] = {}
            at = self.data.find(_LOCAL, 0)
            while at >= 0:
                head = self._local(at)
                if head is not None:
                    found.setdefault(head[0], []).append(at)
                at = self.data.find(_LOCAL, at + 4)
            self._scanned = found
        return self._scanned

    def _local(self, at: int) -> tuple[str, int, int, int, int, int, int] | None:
        """(name, flags, method, crc, compressed size, size, data offset) of a local header."""
        if at + 30 > self.size:
            return None
        sig, _ver, flags, method, _t, _d, crc, csize, usize, nlen, xlen = _LOCAL_HEAD.unpack(
            self.data[at:at + 30])
        start = at + 30 + nlen + xlen
        if sig != _LOCAL or nlen == 0 or nlen > 4096 or start > self.size:
            return None
        raw = bytes(self.data[at + 30:at + 30 + nlen])
        try:
            name = raw.decode("utf-8" if flags & 0x800 else "cp437")
        except UnicodeDecodeError:
            return None
        if 0xFFFFFFFF in (csize, usize):  # ZIP64: the sizes are in the extra field
            extra = bytes(self.data[at + 30 + nlen:start])
            i = 0
            while i + 4 <= len(extra):
                kind, n = struct.unpack("<HH", extra[i:i + 4])
                if kind == 1:
                    vals = [struct.unpack("<Q", extra[i + 4 + 8 * j:i + 12 + 8 * j])[0]
                            for j in range(min(n // 8, 2))]
                    if usize == 0xFFFFFFFF and vals:
                        usize = vals.pop(0)
                    if csize == 0xFFFFFFFF and vals:
                        csize = vals.pop(0)
                    break
                i += 4 + n
        return name, flags, method, crc, csize, usize, start

    def _from_directory(self, info: zipfile.ZipInfo) -> bytes:
        """A member whose local header is damaged: its data where the directory says it is (the
        header's length from the name and extra field the directory holds), CRC-checked."""
        name_len = len(info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437"))
        cause = "local header damaged"
        for extra in dict.fromkeys((len(info.extra), 0)):
            start = info.header_offset + 30 + name_len + extra
            try:
                return self._inflate(info.flag_bits & ~8, info.compress_type, info.CRC,
                                     info.compress_size, info.file_size, start)
            except MemberError as exc:
                cause = exc.cause if exc.cause == "member CRC failed" else cause
        raise MemberError(cause)

    def _from_local(self, at: int) -> bytes:
        head = self._local(at)
        if head is None:
            raise MemberError("local header damaged")
        _name, flags, method, crc, csize, usize, start = head
        return self._inflate(flags, method, crc, csize, usize, start)

    def _inflate(self, flags: int, method: int, crc: int, csize: int, usize: int,
                 start: int) -> bytes:
        if method == 0:
            if flags & 8:
                raise MemberError("member unreadable")
            if start + csize > self.size:
                raise MemberError("member cut short")
            out = bytes(self.data[start:start + csize])
        elif method == 8:
            d = zlib.decompressobj(-15)
            try:
                if flags & 8:  # sizes after the data: inflate until the stream ends
                    chunks = []
                    pos = start
                    while not d.eof and pos < self.size:
                        chunks.append(d.decompress(self.data[pos:pos + (1 << 20)]))
                        pos += 1 << 20
                    if not d.eof:
                        raise MemberError("member cut short")
                    out = b"".join(chunks)
                    tail = start + (pos - start) - len(d.unused_data)
                    desc = bytes(self.data[tail:tail + 16])
                    if desc[:4] == b"PK\x07\x08":
                        desc = desc[4:]
                    if len(desc) < 12:
                        raise MemberError("member cut short")
                    crc, _csize, usize = struct.unpack("<III", desc[:12])
                else:
                    if start + csize > self.size:
                        raise MemberError("member cut short")
                    out = d.decompress(self.data[start:start + csize])
                    if not d.eof:
                        raise MemberError("compressed data damaged")
            except zlib.error as exc:
                raise MemberError("compressed data damaged") from exc
        else:
            raise MemberError("stored with a compression this reader does not know")
        if zlib.crc32(out) != crc or len(out) != usize:
            raise MemberError("member CRC failed")
        return out

    # -- members -------------------------------------------------------------------------------------
    def read(self, name: str) -> bytes:
        """The member's bytes, CRC-checked; `MemberError` (and `damaged[name]`) when it does
        not read, by its directory entry nor by any local header of that name."""
        cause = None
        if self._zf is not None:
            try:
                return self._zf.read(name)
            except KeyError:
                cause = "member missing"
            except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError,
                    NotImplementedError, struct.error) as exc:
                cause = _zip_cause(exc)
        for at in self._scan().get(name, []):
            try:
                return self._from_local(at)
            except MemberError as exc:
                cause = exc.cause if cause in (None, "local header damaged", "member missing") \
                    else cause
        if self._zf is not None and cause == "local header damaged":
            with contextlib.suppress(KeyError):
                try:
                    return self._from_directory(self._zf.getinfo(name))
                except MemberError as exc:
                    cause = exc.cause
        cause = cause or "member unreadable"
        self.damaged[name] = cause
        raise MemberError(cause)


def whole(path: str) -> bool:
    """Every member of the zip reads and matches its CRC-32 (inflated in C, a chunk at a time:
    far less than parsing the JSON costs); False at the first that does not, or no directory."""
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                with zf.open(info) as fh:
                    while fh.read(1 << 20):
                        pass
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, KeyError,
            NotImplementedError, struct.error):
        return False
    return True


def looks_like_eval(path: str) -> bool:
    """An `.eval` whose zip directory is lost but whose first local headers are Inspect's."""
    with contextlib.suppress(OSError):
        with open(path, "rb") as fh:
            head = fh.read(_SCAN_HEAD)
        at = head.find(_LOCAL)
        while 0 <= at and at + 30 <= len(head):
            nlen = struct.unpack("<H", head[at + 26:at + 28])[0]
            name = head[at + 30:at + 30 + nlen].decode("utf-8", "replace")
            if name.startswith(INSPECT_FIRST):
                return True
            at = head.find(_LOCAL, at + 4)
    return False
