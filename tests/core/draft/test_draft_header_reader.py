"""The safetensors header reader and LocalReader on files written by the safetensors library."""

from __future__ import annotations

import numpy as np
import pytest
from safetensors.numpy import save_file

from spectui.core.draft import HeaderError, LocalReader, Reader, exists, read_header, read_int_tensor


async def test_header_matches_what_was_written(tmp_path):
    path = tmp_path / "x.safetensors"
    save_file({"a": np.zeros((2, 3), dtype=np.float16), "d2t": np.array([5, -1, 7], dtype=np.int64),
               "mask": np.array([True, False, True, True])}, str(path), metadata={"format": "pt"})
    reader = LocalReader()
    h = await read_header(reader, str(path))
    assert {k: (v.dtype, v.shape, v.nbytes) for k, v in h.tensors.items()} == {
        "a": ("F16", (2, 3), 12), "d2t": ("I64", (3,), 24), "mask": ("BOOL", (4,), 4)}
    assert h.metadata == {"format": "pt"}
    assert h.data_bytes == 12 + 24 + 4
    n = int.from_bytes(path.read_bytes()[:8], "little")
    assert reader.bytes_read == 8 + n
    assert await read_int_tensor(reader, h, "d2t") == [5, -1, 7]
    assert await read_int_tensor(reader, h, "mask") == [1, 0, 1, 1]
    assert reader.bytes_read == 8 + n + 24 + 4
    with pytest.raises(HeaderError, match="not an integer type"):
        await read_int_tensor(reader, h, "a")
    with pytest.raises(HeaderError, match="over the"):
        await read_int_tensor(reader, h, "d2t", cap=16)


async def test_header_rejects_inconsistent_offsets(tmp_path):
    import json
    import struct

    raw = json.dumps({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}).encode()
    path = tmp_path / "bad.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * 8)
    with pytest.raises(HeaderError, match=r"F32\[4\] needs 16 bytes but data_offsets span 8"):
        await read_header(LocalReader(), str(path))


async def test_local_reader_basics(tmp_path):
    (tmp_path / "f").write_bytes(b"0123456789")
    (tmp_path / "sub").mkdir()
    r = LocalReader()
    assert isinstance(r, Reader)
    assert await r.read(str(tmp_path / "f"), 3, 4) == b"3456"
    assert await r.read(str(tmp_path / "f"), 8, 100) == b"89"
    assert r.bytes_read == 6
    assert await r.size(str(tmp_path / "f")) == 10
    assert await r.size(str(tmp_path / "sub")) is None
    assert await r.listdir(str(tmp_path)) == ["f", "sub"]
    assert await r.listdir(str(tmp_path / "f")) is None
    assert await exists(r, str(tmp_path / "sub")) and not await exists(r, str(tmp_path / "none"))
    with pytest.raises(FileNotFoundError):
        await r.read(str(tmp_path / "none"), 0, 1)
