"""safetensors headers, read without reading tensors.

A safetensors file is: 8 bytes little-endian N, N bytes of JSON ({name: {dtype, shape, data_offsets}},
optional "__metadata__"), then the tensor data; data_offsets are relative to the end of the header.
Only the header is read, plus, on request, the bytes of one small tensor (d2t, t2d) under a hard cap.
"""

from __future__ import annotations

import math
import struct
import sys
from array import array
from dataclasses import dataclass
from typing import Any

from spectui.core.draft.reader import Reader, ReadError
from spectui.core.limits import load_json

MAX_HEADER_BYTES = 100 * 1024 * 1024  # real headers are KBs to a few MBs; 100 MB of JSON is not a header
MAX_TENSOR_READ = 16 * 1024 * 1024  # d2t for a 2M-entry draft vocabulary is 16 MB

DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4,
    "I64": 8, "U64": 8, "F64": 8,
}
# dtype -> array typecode for the integer types whose values a check may need
_INT_CODES = {"BOOL": "B", "U8": "B", "I8": "b", "I16": "h", "U16": "H", "I32": "i", "U32": "I",
              "I64": "q", "U64": "Q"}


class HeaderError(Exception):
    """The file is not a readable safetensors file; the message says why, in one sentence."""


@dataclass(frozen=True)
class TensorInfo:
    dtype: str
    shape: tuple[int, ...]
    start: int  # data offset, relative to the end of the header
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.start

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class SafetensorsHeader:
    path: str
    header_len: int
    file_size: int
    tensors: dict[str, TensorInfo]
    metadata: dict[str, str]

    @property
    def data_start(self) -> int:
        return 8 + self.header_len

    @property
    def data_bytes(self) -> int:
        """Bytes of tensor data the header declares (the largest end offset)."""
        return max((t.end for t in self.tensors.values()), default=0)


async def read_header(reader: Reader, path: str, *, max_header: int = MAX_HEADER_BYTES) -> SafetensorsHeader:
    """Parse the header of `path`, reading 8 + N bytes. Raises HeaderError (or FileNotFoundError)."""
    size = await reader.size(path)
    if size is None:
        raise FileNotFoundError(path)
    if size < 8:
        raise HeaderError(f"truncated: the file is {size} bytes, shorter than the 8-byte header length")
    try:
        (n,) = struct.unpack("<Q", await reader.read(path, 0, 8))
    except struct.error as exc:
        raise HeaderError("truncated while reading the 8-byte header length") from exc
    if n > max_header:
        raise HeaderError(f"header length field says {n} bytes ({_human(n)}) of JSON, over the "
                          f"{_human(max_header)} limit: not a safetensors file, or corrupt")
    if n < 2:
        raise HeaderError(f"header length field says {n} bytes: too short for a JSON header")
    if 8 + n > size:
        raise HeaderError(f"truncated: the header says {n} bytes of JSON but the file is only {size} bytes")
    raw = await reader.read(path, 8, n)
    if len(raw) < n:
        raise HeaderError(f"truncated: got {len(raw)} of the {n} header bytes")
    try:
        obj = load_json(raw.decode("utf-8").rstrip(" "))  # trailing-space padding allowed; depth-limited
    except (UnicodeDecodeError, ValueError) as exc:
        raise HeaderError(f"header is not valid JSON ({exc.__class__.__name__}: {exc})") from exc
    if not isinstance(obj, dict):
        raise HeaderError(f"header JSON is a {type(obj).__name__}, not an object")
    return _parse(path, n, size, obj)


def _parse(path: str, n: int, size: int, obj: dict[str, Any]) -> SafetensorsHeader:
    metadata: dict[str, str] = {}
    tensors: dict[str, TensorInfo] = {}
    for name, entry in obj.items():
        if name == "__metadata__":
            if isinstance(entry, dict):
                metadata = {str(k): str(v) for k, v in entry.items()}
            continue
        if not isinstance(entry, dict):
            raise HeaderError(f"tensor {name!r}: entry is not an object")
        dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if not isinstance(dtype, str):
            raise HeaderError(f"tensor {name!r}: no dtype")
        if not (isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape)):
            raise HeaderError(f"tensor {name!r}: bad shape {shape!r}")
        if not (isinstance(offsets, list) and len(offsets) == 2
                and all(isinstance(o, int) for o in offsets) and 0 <= offsets[0] <= offsets[1]):
            raise HeaderError(f"tensor {name!r}: bad data_offsets {offsets!r}")
        info = TensorInfo(dtype, tuple(shape), offsets[0], offsets[1])
        width = DTYPE_BYTES.get(dtype)
        if width is not None and info.numel * width != info.nbytes:
            raise HeaderError(f"tensor {name!r}: {dtype}{list(shape)} needs {info.numel * width} bytes "
                              f"but data_offsets span {info.nbytes}")
        tensors[name] = info
    header = SafetensorsHeader(path, n, size, tensors, metadata)
    available = size - header.data_start
    if header.data_bytes > available:
        raise HeaderError(f"truncated: the header declares {header.data_bytes} bytes "
                          f"({_human(header.data_bytes)}) of tensor data but the file holds {available}")
    return header


async def read_int_tensor(reader: Reader, header: SafetensorsHeader, name: str, *,
                          cap: int = MAX_TENSOR_READ) -> list[int]:
    """The values of one small integer/bool tensor (flattened), reading only its bytes.

    Raises HeaderError when the tensor is absent, not an integer type, or over `cap` bytes.
    """
    info = header.tensors.get(name)
    if info is None:
        raise HeaderError(f"no tensor {name!r} in {header.path}")
    code = _INT_CODES.get(info.dtype)
    if code is None:
        raise HeaderError(f"tensor {name!r} is {info.dtype}, not an integer type")
    if info.nbytes > cap:
        raise HeaderError(f"tensor {name!r} is {info.nbytes} bytes, over the {_human(cap)} read limit")
    try:
        data = await reader.read(header.path, header.data_start + info.start, info.nbytes)
    except FileNotFoundError as exc:
        raise HeaderError(f"{header.path} disappeared while reading {name!r}") from exc
    except ReadError as exc:
        raise HeaderError(str(exc)) from exc
    if len(data) != info.nbytes:
        raise HeaderError(f"truncated: got {len(data)} of the {info.nbytes} bytes of {name!r}")
    values = array(code)
    values.frombytes(data)
    if sys.byteorder == "big" and values.itemsize > 1:
        values.byteswap()
    return values.tolist()


def _human(n: int) -> str:
    for unit, div in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} B"
