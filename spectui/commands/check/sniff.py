"""Is a local file an SGLang log? The one test `check`, `connect FILE`, `record FILE` and `report FILE` share:
binary data, or text with no line SGLang writes, is refused with one line (exit 2) before anything runs."""

from __future__ import annotations

from spectui.core.log import Pipeline, RecordKind

SNIFF_BYTES = 1 << 20  # the start of the file, and as much of its end, are parsed (a big log is not read whole)


def looks_binary(head: bytes) -> bool:
    """NUL bytes (over 1 %) or undecodable UTF-8 (over 5 %) in the first bytes."""
    if not head:
        return False
    if head.count(b"\x00") > len(head) // 100:
        return True
    text = head.decode("utf-8", errors="replace")
    return text.count("\ufffd") > len(text) // 20


def sglang_lines(data: bytes) -> int:
    """How many lines of `data` the parser recognises as SGLang's (decode, prefill, start-up, warning, error)."""
    pipe = Pipeline(bulk=True)
    pipe.feed_bytes(data)
    pipe.finish()
    return sum(v for k, v in pipe.parser.counts.items() if k is not RecordKind.OTHER)


def binary_message(name: str) -> str:
    return f"{name} does not look like a text log (binary data, no SGLang lines found); give the server's log file"


def not_sglang_message(name: str, lines: int | None) -> str:
    """`lines`: the file's line count (None: only its first and last SNIFF_BYTES were read)."""
    where = f"its {lines} line{'s' if lines != 1 else ''}" if lines is not None else \
        f"its first and last {SNIFF_BYTES >> 20} MiB"
    return (f"{name}: no SGLang line found in {where} (no decode, prefill, start-up, warning or error line): "
            "is this an SGLang server log?")


def log_file_problem(path: str, name: str | None = None, *, text_too: bool = True) -> str | None:
    """None when the local file at `path` reads as an SGLang log (or is empty: a log just created); else the
    one-line reason. `text_too=False`: only binary data is refused (a live server's log may not have its
    first SGLang line yet). An unreadable file is left to the caller's own error."""
    import os

    name = name or path
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(SNIFF_BYTES)
            tail = b""
            if size > 2 * SNIFF_BYTES:
                f.seek(size - SNIFF_BYTES)
                tail = f.read(SNIFF_BYTES)
                tail = tail[tail.find(b"\n") + 1 :]  # from a whole line on
    except OSError:
        return None
    if not head.strip():
        return None
    first = sglang_lines(head[:65536])  # nearly every log answers here: its first lines are SGLang's
    if first == 0 and looks_binary(head[:65536]):
        return binary_message(name)
    if first or not text_too:
        return None
    if (len(head) > 65536 and sglang_lines(head)) or (tail and sglang_lines(tail)):
        return None
    if size > len(head):
        return not_sglang_message(name, None)
    return not_sglang_message(name, head.count(b"\n") + (0 if head.endswith(b"\n") else 1))


def refuse_binary_target(text: str | None) -> None:
    """For `watch TARGET`: a local file TARGET holding binary data is refused (InputError, exit 2); a text
    file is followed as it grows (its first SGLang line may be still to come)."""
    import os

    from spectui.errors import InputError, UsageError
    from spectui.sources.target import parse_target

    try:
        target = parse_target(text or "")
    except UsageError:
        return  # the command says what is wrong with it
    if target.kind in ("file", "local") and target.path and os.path.isfile(os.path.expanduser(target.path)):
        problem = log_file_problem(os.path.expanduser(target.path), target.path, text_too=False)
        if problem:
            raise InputError(problem)
