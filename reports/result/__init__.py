"""The AuditResult: the one typed contract between the audit pipeline, the API and the reports.

The pipeline builds it, ``GET /v1/audits/{id}`` returns it (so ``/openapi.json`` documents it) and
``reports`` ranks, plans and renders from it alone, reading attributes, never dict keys. Sections name
the fields that users and the reports rely on; detector records accept fields added by newer detectors
(``extra="allow"``), so the contract only ever grows (changes are additive). A test's ``details`` and a
limitation's ``evidence`` stay open mappings: their content depends on the test.

:class:`AuditEvidence` is the result before its conclusions (limitations, verdict, next round), which
the ranking computes from it; every public function of ``reports`` takes either, or its JSON, and
validates it once (:func:`as_evidence`).
"""
from reports.result.audit import (
    SCHEMA_VERSION,
    AuditEvidence,
    AuditResult,
    Columns,
    DatasetRef,
    Overall,
    Parameters,
    as_evidence,
    as_result,
)
from reports.result.base import Interval, Number
from reports.result.claims import (
    Allocation,
    Decision,
    LabelRequest,
    LimitationRecord,
    NextRound,
    Note,
    ScenarioMatch,
    Severity,
    SignalCheck,
    Verdict,
)
from reports.result.inputs import CovariateSection, MultivariateTest, ShiftTest, TestGroup
from reports.result.labels import (
    Annotator,
    ConceptSection,
    EstimateCheck,
    EstimatedPerformance,
    LabelQuality,
    LabelSection,
    MethodEstimate,
    MetricEstimate,
    ObservedPerformance,
    PriorEstimate,
    SourceDisagreement,
)
from reports.result.populations import (
    Attribution,
    AttributionCell,
    Discovery,
    EmbeddingRegion,
    EmbeddingTest,
    SemanticSection,
    SliceRecord,
    UntestedContextRecord,
)

__all__ = [
    "SCHEMA_VERSION", "AuditEvidence", "AuditResult", "ScenarioMatch", "SignalCheck", "as_evidence", "as_result",
    "Number", "Interval",
    "DatasetRef", "Overall", "Parameters", "Columns", "ShiftTest", "MultivariateTest", "TestGroup",
    "CovariateSection", "PriorEstimate", "MetricEstimate", "MethodEstimate", "EstimatedPerformance",
    "ObservedPerformance", "EstimateCheck", "ConceptSection", "LabelSection", "Annotator", "SourceDisagreement",
    "LabelQuality", "UntestedContextRecord", "EmbeddingRegion", "EmbeddingTest", "AttributionCell", "Attribution",
    "SemanticSection", "SliceRecord", "Discovery", "Decision", "LimitationRecord", "Verdict", "Allocation",
    "LabelRequest", "NextRound", "Note", "Severity",
]
