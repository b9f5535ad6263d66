"""Draft checkpoint inspection (`spectui inspect`): is the draft model the problem?

Pure: reads go through a `Reader` (LocalReader here; an SSH reader lives outside core).

    from spectui.core.draft import LocalReader, inspect
    result = await inspect(LocalReader(), draft="/d", model="/m", algorithm="EAGLE3", sglang_version="0.5.6")
    result.to_json()  # {"draft": {...}, "target": {...}, "launch": {...}, "findings": [...]}
"""

from spectui.core.draft.findings import CATEGORIES, FORMATS, SEVERITIES, Finding
from spectui.core.draft.inspection import Inspection, inspect
from spectui.core.draft.reader import (
    LocalReader,
    Reader,
    ReadError,
    exists,  # noqa: E402
)
from spectui.core.draft.st_header import (
    HeaderError,
    SafetensorsHeader,
    TensorInfo,
    read_header,
    read_int_tensor,  # noqa: E402
)

__all__ = [
    "CATEGORIES",
    "FORMATS",
    "Finding",
    "HeaderError",
    "Inspection",
    "LocalReader",
    "ReadError",
    "Reader",
    "SEVERITIES",
    "SafetensorsHeader",
    "TensorInfo",
    "exists",
    "inspect",
    "read_header",
    "read_int_tensor",
]
