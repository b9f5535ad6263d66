"""The log: SGLang's lines parsed into records (parse, bulk, prefix, fields, tracebacks, versions), the
metrics over them (accept length, tok/s, phase) and the pipeline that check, watch and the cockpit share.

Callers outside this package import these names from here; the modules are the package's own business.
"""

from spectui.core.log.bulk import segments  # noqa: E402
from spectui.core.log.metrics import MetricSnapshot, MetricsTracker, ServerPhase, Stat
from spectui.core.log.parse import LogParser
from spectui.core.log.pipeline import Pipeline, PipelineUpdate
from spectui.core.log.records import (  # noqa: E402
    DecodeSample,
    ErrorEvent,
    Frame,
    LineContext,
    Milestone,
    MilestoneKind,
    OtherLine,
    PrefillSample,
    Record,
    RecordKind,
    WarningEvent,
    record_kind,
)
from spectui.core.log.serverargs import (  # noqa: E402
    looks_resolved,
    parse_server_args,
    prefer_server_args,
    unresolved_fields,
)
from spectui.core.log.versionguess import guess_version

__all__ = [
    "DecodeSample",
    "ErrorEvent",
    "Frame",
    "LineContext",
    "LogParser",
    "MetricSnapshot",
    "MetricsTracker",
    "Milestone",
    "MilestoneKind",
    "OtherLine",
    "Pipeline",
    "PipelineUpdate",
    "PrefillSample",
    "Record",
    "RecordKind",
    "ServerPhase",
    "Stat",
    "WarningEvent",
    "guess_version",
    "looks_resolved",
    "parse_server_args",
    "prefer_server_args",
    "record_kind",
    "segments",
    "unresolved_fields",
]
