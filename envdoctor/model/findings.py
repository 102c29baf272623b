"""The typed vocabulary every layer shares: severities, probe results, findings, fixes, reports."""

from __future__ import annotations

import enum
from dataclasses import field, fields

from envdoctor.model.types import Interpreter as Interpreter
from envdoctor.model.types import PlatformInfo as PlatformInfo
from envdoctor.model.types import StaleVariable as StaleVariable
from envdoctor.model.types import TextEnum as TextEnum
from envdoctor.util.records import record
from envdoctor.util.sizes import parse_size


class Severity(str, enum.Enum):
    OK = "ok"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return _SEVERITY_RANK[self]

    # A str-valued enum inherits str's ordering ("error" < "info"); severities order by rank.
    def __lt__(self, other: object) -> bool:
        return self.rank < other.rank if isinstance(other, Severity) else NotImplemented

    def __le__(self, other: object) -> bool:
        return self.rank <= other.rank if isinstance(other, Severity) else NotImplemented

    def __gt__(self, other: object) -> bool:
        return self.rank > other.rank if isinstance(other, Severity) else NotImplemented

    def __ge__(self, other: object) -> bool:
        return self.rank >= other.rank if isinstance(other, Severity) else NotImplemented


_SEVERITY_RANK = {Severity.OK: 0, Severity.INFO: 1, Severity.WARNING: 2, Severity.ERROR: 3}


class ProbeStatus(str, enum.Enum):
    OK = "ok"
    NOT_APPLICABLE = "not_applicable"
    FAILED = "failed"
    TIMEOUT = "timeout"


class FixKind(TextEnum):
    """Who may carry a fix out: `envdoctor fix` runs INSTALL fixes (package-manager commands for the
    examined interpreter, built by the planner or from exact pins); MANUAL ones (drivers, system
    packages, settings, reboots) it only prints."""

    MANUAL = "manual"
    INSTALL = "install"


@record
class Fix:
    """One way out: a sentence, the commands to paste, and where to read more."""

    summary: str
    commands: tuple[str, ...] = ()
    link: str | None = None
    kind: FixKind = FixKind.MANUAL


class Support(TextEnum):
    """What a finding of `envdoctor why` rests on."""

    TEXT = "text"  # the pasted error alone: this machine's facts do not show it
    FACTS = "facts"  # this machine's facts alone: the pasted error does not point to it
    BOTH = "both"  # the pasted error points to it and the facts confirm it


@record
class Finding:
    code: str
    name: str
    severity: Severity
    title: str
    detail: str
    area: str
    evidence: tuple[str, ...] = ()
    fixes: tuple[Fix, ...] = ()
    # The code of the finding this one is a consequence of (engine.fold): shown under it, without
    # fixes of its own. None for a finding that stands on its own.
    folded_under: str | None = None
    support: Support | None = None  # set by `envdoctor why` only


@record
class ProbeResult:
    """What one probe saw. Absence, failure and timeout are distinct statuses, never None."""

    probe: str
    status: ProbeStatus
    seconds: float
    facts: object | None = None
    error: str | None = None


def _key(name: str) -> dict[str, str]:
    return {"key": name}


@record
class Expectations:
    """What the workload needs (check's --require-* options, envdoctor.require's keywords).

    Settings (settings.py) parse and validate them; here they are only data, which the rules judge
    and the report carries. Specifiers are kept as validated text (packaging's syntax). Each field's
    `key` is its name as users write it and as the JSON report shows it.
    """

    gpu: bool = field(default=False, metadata=_key("require-gpu"))
    min_gpus: int | None = field(default=None, metadata=_key("min-gpus"))
    # torch.version.cuda must match, e.g. ">=12.1"
    cuda: str | None = field(default=None, metadata=_key("require-cuda"))
    # torch.__version__ must match, e.g. ">=2.4,<2.6"
    torch: str | None = field(default=None, metadata=_key("require-torch"))
    # every usable GPU's compute capability, e.g. ">=8.0"
    capability: str | None = field(default=None, metadata=_key("require-capability"))
    # every usable GPU, e.g. "24GiB"
    min_gpu_memory: str | None = field(default=None, metadata=_key("min-gpu-memory"))
    # the GPU smoke test must have passed
    smoke: bool = field(default=False, metadata=_key("require-smoke"))

    @property
    def stated(self) -> bool:
        return any(getattr(self, f.name) not in (None, False) for f in fields(self))

    @property
    def needs_gpu(self) -> bool:
        """Any GPU expectation implies that there is a GPU at all."""
        return bool(self.gpu or self.min_gpus or self.capability or self.min_gpu_memory or self.smoke)

    @property
    def min_gpu_memory_bytes(self) -> int | None:
        return None if self.min_gpu_memory is None else parse_size(self.min_gpu_memory)

    def items(self) -> tuple[tuple[str, object], ...]:
        """(key, value) of each stated expectation, keys as users write them (require-cuda)."""
        return tuple(
            (f.metadata["key"], getattr(self, f.name))
            for f in fields(self)
            if getattr(self, f.name) not in (None, False)
        )


@record
class Explained:
    """What `envdoctor why` read, and whether it knew the error."""

    known: bool  # some signature matched the pasted text
    signatures: tuple[str, ...]  # the ids of those that matched, in the order the text shows them
    read_bytes: int
    truncated: bool  # the input was longer than envdoctor reads
    input: str  # "stdin" or the file named


@record
class PluginInfo:
    """A package that adds rules or probes through the envdoctor.rules / envdoctor.probes entry
    points, and what it added (or why it could not be loaded)."""

    package: str  # the distribution's name
    version: str
    entry_point: str  # "group:name = value"
    rules: tuple[str, ...] = ()  # the codes it added
    probes: tuple[str, ...] = ()  # the probe names it added
    error: str | None = None  # why it did not load: it adds nothing then


@record
class PluginFacts:
    """The plugin packages this run found: rules read it like facts (ED902 names those that failed)."""

    plugins: tuple[PluginInfo, ...] = ()


@record
class Report:
    envdoctor_version: str
    interpreter: Interpreter
    platform: PlatformInfo
    probes: tuple[ProbeResult, ...]
    findings: tuple[Finding, ...]
    strict: bool = False
    source: str = "live"  # "live" or the snapshot file the facts came from
    areas: tuple[AreaVerdict, ...] = field(default=())
    expectations: Expectations | None = None  # what the project said it needs, if anything
    ignored: tuple[str, ...] = ()  # rule codes silenced by --ignore
    checked: tuple[str, ...] = ()  # rule codes that ran (their needed facts were there)
    explained: Explained | None = None  # `envdoctor why`: the pasted error and what it matched
    plugins: tuple[PluginInfo, ...] = ()  # the plugin packages found (none with --no-plugins)

    @property
    def worst(self) -> Severity:
        return max((f.severity for f in self.findings), default=Severity.OK)

    @property
    def primary(self) -> tuple[Finding, ...]:
        """The findings that stand on their own: what a reader sees first (folded ones go under)."""
        return tuple(f for f in self.findings if f.folded_under is None)

    def consequences(self, finding: Finding) -> tuple[Finding, ...]:
        """The findings folded under `finding`."""
        if finding.folded_under is not None:
            return ()
        # Two findings of one code: the consequences go under the first, which the reader meets first.
        first = next((f for f in self.findings if f.code == finding.code and f.folded_under is None), None)
        if first is not finding:
            return ()
        return tuple(f for f in self.findings if f.folded_under == finding.code)

    @property
    def status(self) -> str:
        worst = self.worst
        if worst is Severity.ERROR:
            return "error"
        if worst is Severity.WARNING:
            return "warning"
        return "ok"

    @property
    def exit_code(self) -> int:
        worst = self.worst
        if worst is Severity.ERROR or (self.strict and worst is Severity.WARNING):
            return 1
        return 0


@record
class AreaVerdict:
    """One line of the flutter-doctor style summary: an area, its worst severity and a verdict."""

    area: str
    title: str
    severity: Severity
    verdict: str
    details: tuple[str, ...] = ()  # lines shown under the area line (the smoke test's block)
