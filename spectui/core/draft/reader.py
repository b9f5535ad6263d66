"""How the inspector reads a host's files: a three-method Reader protocol and a local implementation.

The protocol is deliberately small so that an SSH reader (SFTP, or `dd`/`tail -c` over exec) can
implement it: ranged reads, a size, a directory listing. Every implementation counts the bytes it
returned in `bytes_read`, which is how the inspector proves it read headers, not tensors.
"""

from __future__ import annotations

import asyncio
import os
import stat
from typing import Protocol, runtime_checkable


class ReadError(Exception):
    """A read failed for a reason other than "no such file" (permissions, I/O, a dropped connection)."""


@runtime_checkable
class Reader(Protocol):
    """Read-only access to one host's filesystem (POSIX paths)."""

    bytes_read: int
    """Total bytes returned by `read` so far."""

    async def read(self, path: str, offset: int, length: int) -> bytes:
        """Up to `length` bytes of the regular file `path` from `offset` (fewer at end of file).

        Raises FileNotFoundError when the file does not exist, ReadError on any other failure.
        """
        ...

    async def size(self, path: str) -> int | None:
        """Size in bytes of the regular file `path` (symlinks followed); None if it is not a regular file."""
        ...

    async def listdir(self, path: str) -> list[str] | None:
        """Entry names of the directory `path` (symlinks followed), sorted; None if it is not a directory."""
        ...


async def exists(reader: Reader, path: str) -> bool:
    """True when `path` is a regular file or a directory."""
    return await reader.size(path) is not None or await reader.listdir(path) is not None


async def read_small(reader: Reader, path: str, cap: int) -> bytes:
    """The whole of a small file, refusing (ReadError) one larger than `cap` bytes without reading it."""
    size = await reader.size(path)
    if size is None:
        raise FileNotFoundError(path)
    if size > cap:
        raise ReadError(f"{path} is {size} bytes, over the {cap}-byte limit for this file")
    return await reader.read(path, 0, size)


class LocalReader:
    """This machine's files, read with plain os calls in a worker thread."""

    def __init__(self) -> None:
        self.bytes_read = 0

    async def read(self, path: str, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0:
            raise ReadError(f"bad range {offset}+{length} for {path}")
        data = await asyncio.to_thread(self._read, path, offset, length)
        self.bytes_read += len(data)
        return data

    @staticmethod
    def _read(path: str, offset: int, length: int) -> bytes:
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                return f.read(length)
        except FileNotFoundError:
            raise
        except (OSError, ValueError) as exc:  # IsADirectoryError, PermissionError, EIO...
            raise ReadError(f"cannot read {path}: {exc}") from exc

    async def size(self, path: str) -> int | None:
        return await asyncio.to_thread(self._size, path)

    @staticmethod
    def _size(path: str) -> int | None:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    async def listdir(self, path: str) -> list[str] | None:
        return await asyncio.to_thread(self._listdir, path)

    @staticmethod
    def _listdir(path: str) -> list[str] | None:
        try:
            return sorted(os.listdir(path)) if os.path.isdir(path) else None
        except (OSError, ValueError):
            return None
