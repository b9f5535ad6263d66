"""The log: SGLang's lines parsed into records (parse, bulk, prefix, fields, tracebacks, versions), the
metrics over them (accept length, tok/s, phase) and the pipeline that check, watch and the cockpit share.

Callers outside this package import these names from here; the modules are the package's own business.
"""

from spectui.core.log.metrics import MetricSnapshot, MetricsTracker, ServerPhase, Stat
from spectui.core.log.parse import LogParser
from spectui.core.log.pipeline import Pipeline, PipelineUpdate
from spectui.core.log.records import (
    DecodeSample,
    ErrorEvent,
    LineContext,
    Milestone,
    MilestoneKind,
    OtherLine,
    PrefillSample,
    Record,
    RecordKind,
    WarningEvent,
)
from spectui.core.log.versionguess import guess_version

__all__ = [
    "DecodeSample", "ErrorEvent", "LineContext", "LogParser", "MetricSnapshot", "MetricsTracker", "Milestone",
    "MilestoneKind", "OtherLine", "Pipeline", "PipelineUpdate", "PrefillSample", "Record", "RecordKind",
    "ServerPhase", "Stat", "WarningEvent", "guess_version",
]
