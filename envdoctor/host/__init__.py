"""Platform access for probes: the Host protocol, the live host and a scripted host for tests."""

from envdoctor.host.base import ChildOutcome, CommandResult, DiskInfo, Host, MemoryInfo

__all__ = ["ChildOutcome", "CommandResult", "DiskInfo", "Host", "MemoryInfo"]
