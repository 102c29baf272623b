"""Typed round-trips and secret masking: the two guarantees every output format relies on."""

from __future__ import annotations

import json

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from envdoctor.knowledge.drivers import DriverKind
from envdoctor.model.findings import Finding, Fix, Severity, TextEnum
from envdoctor.probes.nvml import Gpu, NvmlFacts, NvmlSource, NvmlStatus
from envdoctor.probes.torch_smoke import DeviceKind, SmokeDevice, SmokeFacts, SmokeStep, StepStatus
from envdoctor.util.redact import MASK, is_secret_name, redact, redact_text
from envdoctor.util.serde import DataError, from_data, to_data


def test_nested_facts_round_trip() -> None:
    facts = NvmlFacts(
        status=NvmlStatus.OK,
        source=NvmlSource.NVIDIA_SMI,
        driver_version="550.144.03",
        cuda_driver_version=12040,
        gpus=(Gpu(0, "NVIDIA GeForce RTX 3090", (8, 6), 24 * 2**30),),
        pci_nvidia_devices=("0000:01:00.0",),
    )
    data = json.loads(json.dumps(to_data(facts)))
    assert (data["status"], data["source"]) == ("ok", "nvidia-smi")  # the snapshot keeps its strings
    back = from_data(NvmlFacts, data)
    assert back == facts and back.status is NvmlStatus.OK and back.source is NvmlSource.NVIDIA_SMI


def test_enum_fields_round_trip_as_their_values() -> None:
    step = SmokeStep("init", StepStatus.TIMEOUT, timeout=30.0)
    smoke = SmokeFacts(
        True, devices=(SmokeDevice("cuda:0", DeviceKind.CUDA, steps=(step,)),), stopped=step.status
    )
    data = to_data(smoke)
    assert data["stopped"] == "timeout" and data["devices"][0]["kind"] == "cuda"
    assert json.dumps(data) == json.dumps(json.loads(json.dumps(data)))
    back = from_data(SmokeFacts, data)
    assert back == smoke and back.stopped is StepStatus.TIMEOUT
    assert back.devices[0].steps[0].status is StepStatus.TIMEOUT and back.devices[0].kind is DeviceKind.CUDA


def test_an_unknown_enum_value_names_the_path_and_the_allowed_values() -> None:
    data = to_data(SmokeFacts(True, devices=(SmokeDevice("cpu", DeviceKind.CPU),)))
    data["devices"][0]["kind"] = "tpu"
    with pytest.raises(DataError, match=r"\$\.devices\[0\]\.kind: 'tpu' is not one of cpu, cuda, rocm, mps"):
        from_data(SmokeFacts, data)


def test_text_enums_read_as_their_value() -> None:
    assert f"{DriverKind.TOO_OLD}" == str(DriverKind.TOO_OLD) == "too_old"
    assert f"[{StepStatus.OK:>4}]" == "[  ok]" and "status = " + NvmlStatus.OK == "status = ok"
    assert json.dumps({"kind": DriverKind.COMPAT}) == '{"kind": "compat"}'
    assert DriverKind.TOO_OLD == "too_old" and isinstance(DriverKind.TOO_OLD, TextEnum)
    assert StepStatus.parse("wrong", StepStatus.FAILED) is StepStatus.WRONG
    assert StepStatus.parse("exploded", StepStatus.FAILED) is StepStatus.FAILED
    assert StepStatus.parse(None, StepStatus.FAILED) is StepStatus.FAILED


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"status": 3}, "$.status: 3 is not one of ok, library_not_found"),
        ({"status": "ok", "gpus": {}}, "$.gpus: expected a list, got an object"),
        ({"status": "ok", "gpus": [{"index": "0"}]}, "$.gpus[0].index: expected an integer, got a string"),
        ({"status": "ok", "gpus": [{"index": 0, "capability": [8]}]}, "expected 2 items, got 1"),
        ({}, "missing field 'status'"),
    ],
)
def test_bad_data_names_the_path(data: object, message: str) -> None:
    with pytest.raises(DataError, match=message.replace("[", r"\[").replace("]", r"\]").replace("$", r"\$")):
        from_data(NvmlFacts, data)


def test_enum_values_are_checked() -> None:
    with pytest.raises(DataError, match="is not one of"):
        from_data(Severity, "fatal")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://user:tok3n@host.example/simple", "https://user:****@host.example/simple"),
        ("https://user:p@ss@host.example/simple", "https://user:****@host.example/simple"),
        ("https://tok3n@host.example/simple", "https://****@host.example/simple"),
        ("--index-url https://u:x@h.example/s --x", "--index-url https://u:****@h.example/s --x"),
        ("https://conda.anaconda.org/t/ab-12cd/pytorch", "https://conda.anaconda.org/t/****/pytorch"),
        ("https://h.example/s?token=abc&x=1", "https://h.example/s?token=****&x=1"),
        ("https://h.example/s?X-Amz-Signature=abc", "https://h.example/s?X-Amz-Signature=****"),
        ("https://download.pytorch.org/whl/cu124", "https://download.pytorch.org/whl/cu124"),
    ],
)
def test_redact_text(text: str, expected: str) -> None:
    assert redact_text(text) == expected


_URL_SAFE = "".join(chr(c) for c in range(33, 127) if chr(c) not in "/@'\"<>")


@given(st.text(alphabet=_URL_SAFE, min_size=4, max_size=30))
def test_any_password_is_masked(secret: str) -> None:
    # A "secret" such as "--in" also occurs in the rest of the command, where it is no secret.
    assume(secret not in "pip install x --index-url https://me:@mirror.example/simple")
    out = redact_text(f"pip install x --index-url https://me:{secret}@mirror.example/simple")
    assert out == f"pip install x --index-url https://me:{MASK}@mirror.example/simple"


def test_secret_names() -> None:
    assert is_secret_name("HF_TOKEN") and is_secret_name("AWS_SECRET_ACCESS_KEY")
    assert is_secret_name("UV_INDEX_PRIVATE_PASSWORD") and is_secret_name("OPENAI_API_KEY")
    assert not is_secret_name("PATH") and not is_secret_name("CUDA_HOME")


def test_redact_walks_dataclasses_and_keeps_enums() -> None:
    finding = Finding(
        code="ED999",
        name="x",
        severity=Severity.WARNING,
        title="index https://u:hunter2@h.example/simple",
        detail="",
        area="mirrors",
        fixes=(Fix("use it", ("pip install --index-url https://u:hunter2@h.example/simple x",)),),
    )
    clean = redact(finding)
    assert clean.severity is Severity.WARNING
    assert "hunter2" not in repr(clean)
    assert redact({"GITHUB_TOKEN": "ghp_abc", "PATH": "/usr/bin"}) == {
        "GITHUB_TOKEN": MASK,
        "PATH": "/usr/bin",
    }
