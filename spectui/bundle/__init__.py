"""Incident bundles (one versioned tar.gz, docs/BUNDLE.md) and the GitHub-issue report.

Write: `write_bundle(path, BundleParts(...))` or `with BundleWriter(path, target=...) as w: ...`.
Read: `read_bundle(path) -> Bundle` (typed accessors, `log_replay(speed)`, `replay(speed)`);
`is_bundle(path)` sniffs a file cheaply. Report: `render_report(bundle | path | ReportInput | check_dict,
format="md" | "json")`. Errors are `BundleError` subclasses (one line, exit code 2).
"""

from spectui.bundle.errors import (
    BundleChecksumError,
    BundleCorruptError,
    BundleError,
    BundleTooLargeError,
    BundleTruncatedError,
    BundleVersionError,
    NotABundleError,
)
from spectui.bundle.manifest import FORMAT_VERSION, Manifest, MemberInfo, Window
from spectui.bundle.masking import Masker
from spectui.bundle.reader import Bundle, ReplayEvent, SeriesPoint, Snapshot, is_bundle, read_bundle
from spectui.bundle.report import REPORT_CAP, differences, render_report
from spectui.bundle.report.inputs import (
    ReportInput,
    decode_summary,
    find_first_error,
    report_input_from_bundle,
    report_input_from_check,
)
from spectui.bundle.writer import BundleParts, BundleWriter, write_bundle

__all__ = [
    "FORMAT_VERSION", "REPORT_CAP", "Bundle", "BundleChecksumError", "BundleCorruptError", "BundleError",
    "BundleParts", "BundleTooLargeError", "BundleTruncatedError", "BundleVersionError", "BundleWriter", "Manifest", "Masker",
    "MemberInfo", "NotABundleError", "ReplayEvent", "ReportInput", "SeriesPoint", "Snapshot", "Window",
    "decode_summary", "differences", "find_first_error", "is_bundle", "read_bundle", "render_report",
    "report_input_from_bundle", "report_input_from_check", "write_bundle",
]
