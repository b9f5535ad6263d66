"""Errors reading an incident bundle. Each is a one-line `InputError` (the CLI maps it to exit code 2).

BundleError                       base: a file that cannot be used as a bundle
├── NotABundleError               not a tar / tar.gz, or a tar without `manifest.json`
├── BundleVersionError            made by a newer spectui (format_version above what this one reads)
└── BundleCorruptError            the bundle's bytes are damaged
    ├── BundleTruncatedError      cut short (incomplete gzip/tar, or a member listed in the manifest is missing)
    ├── BundleChecksumError       a member's size or sha256 differs from the manifest
    └── BundleTooLargeError       more data than the format allows (a member over its cap, a gzip bomb, or
                                  bytes the manifest does not account for): refused before it is read
"""

from __future__ import annotations

from spectui.errors import InputError


def one_line(text: object, limit: int = 300) -> str:
    """Text safe for a one-line message: control characters and newlines replaced, length capped."""
    s = "".join(ch if ch.isprintable() else " " for ch in str(text))
    return s if len(s) <= limit else s[: limit - 1] + "…"


class BundleError(InputError):
    """Base class: `str(exc)` is one line naming the file and what to do."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message, 600))


class NotABundleError(BundleError):
    pass


class BundleVersionError(BundleError):
    def __init__(self, path: object, found: int, supported: int) -> None:
        super().__init__(
            f"{one_line(path)} was made by a newer spectui (format {found}); this spectui reads up to "
            f"{supported} — upgrade: pip install -U spectui"
        )
        self.found = found
        self.supported = supported


class BundleCorruptError(BundleError):
    pass


class BundleTruncatedError(BundleCorruptError):
    pass


class BundleChecksumError(BundleCorruptError):
    def __init__(self, message: str, *, member: str) -> None:
        super().__init__(message)
        self.member = member


class BundleTooLargeError(BundleCorruptError):
    pass
