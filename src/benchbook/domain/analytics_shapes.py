"""What the API shows of its aggregates (OpenAPI tag ``analytics``: the ``Analytics*`` components),
as types: :mod:`.analytics` builds them, the analytics handlers answer them, and
``tests/test_response_shapes.py`` holds them to the document's keys. A bucketed answer names its
``bucket`` size (``day``, ``week`` or ``month``) and labels each item's bucket by its first day
in UTC, ``YYYY-MM-DD``; every ``count`` is a whole number.

No ``from __future__ import annotations`` here: on Python 3.11 a TypedDict whose annotations
are strings counts every ``NotRequired`` key as required (``__required_keys__``)."""
from typing import TypedDict


class RecordCountItem(TypedDict):
    """One item of ``AnalyticsRecordCounts``: live records of one schema in one collection."""

    dataset: str
    schema_name: str
    count: int


class AnalyticsRecordCounts(TypedDict):
    """OpenAPI ``AnalyticsRecordCounts``: live records now, by collection and schema name."""

    items: list[RecordCountItem]


class RecordGrowthItem(TypedDict):
    """One item of ``AnalyticsRecordGrowth``: records of one schema created in one collection in
    one bucket."""

    bucket: str
    dataset: str
    schema_name: str
    count: int


class AnalyticsRecordGrowth(TypedDict):
    """OpenAPI ``AnalyticsRecordGrowth``: records created per bucket, collection and schema."""

    bucket: str
    items: list[RecordGrowthItem]


class AuditEventsItem(TypedDict):
    """One item of ``AnalyticsAuditEvents``: history entries of one action on one kind of thing
    in one bucket."""

    bucket: str
    action: str
    entity_type: str
    count: int


class AnalyticsAuditEvents(TypedDict):
    """OpenAPI ``AnalyticsAuditEvents``: history entries per bucket, action and entity type."""

    bucket: str
    items: list[AuditEventsItem]


class JobsByTriggerItem(TypedDict):
    """One item of ``AnalyticsJobsByTrigger``: runs of one trigger."""

    trigger: str
    count: int


class AnalyticsJobsByTrigger(TypedDict):
    """OpenAPI ``AnalyticsJobsByTrigger``: runs created in the range, by trigger."""

    items: list[JobsByTriggerItem]


class JobStatusItem(TypedDict):
    """One item of ``AnalyticsJobStatus``: runs of one status created in one bucket."""

    bucket: str
    status: str
    count: int


class AnalyticsJobStatus(TypedDict):
    """OpenAPI ``AnalyticsJobStatus``: runs per bucket and status."""

    bucket: str
    items: list[JobStatusItem]


class FailuresByPluginItem(TypedDict):
    """One item of ``AnalyticsFailuresByPlugin``: failed steps of one plugin in runs created in
    one bucket."""

    bucket: str
    plugin: str
    count: int


class AnalyticsFailuresByPlugin(TypedDict):
    """OpenAPI ``AnalyticsFailuresByPlugin``: failed step executions per bucket and plugin."""

    bucket: str
    items: list[FailuresByPluginItem]


class AiUsageItem(TypedDict):
    """One item of ``AnalyticsAiUsage``: tokens of one provider's model in one bucket."""

    bucket: str
    provider: str
    model: str
    input_tokens: int
    output_tokens: int


class AnalyticsAiUsage(TypedDict):
    """OpenAPI ``AnalyticsAiUsage``: input and output tokens per bucket, provider and model."""

    bucket: str
    items: list[AiUsageItem]


class DurationBin(TypedDict):
    """One of ``AnalyticsJobDurations.bins``: the step executions whose duration falls in the
    range ``label`` names (``0.5-1s``)."""

    label: str
    count: int


class PercentileMarker(TypedDict):
    """One of ``AnalyticsJobDurations.percentile_markers``: the bin (by its label) a percentile
    (``label``: ``p50``, ``p90`` or ``p99``) falls in."""

    label: str
    bin_label: str


class AnalyticsJobDurations(TypedDict):
    """OpenAPI ``AnalyticsJobDurations``: durations of step executions, in seconds: their
    ``count``, mean, extremes and nearest-rank percentiles (all None when ``count`` is 0), ten
    ``bins`` from 0 to the longest rounded up (empty when ``count`` is 0) and the bin of each
    percentile."""

    count: int
    avg_seconds: float | None
    min_seconds: float | None
    max_seconds: float | None
    p50_seconds: float | None
    p90_seconds: float | None
    p99_seconds: float | None
    bins: list[DurationBin]
    percentile_markers: list[PercentileMarker]
