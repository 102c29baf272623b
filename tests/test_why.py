"""`envdoctor why`: a pasted error explained with the facts (issue 22, section 3).

Through the real command line, in-process (run_cli), on recorded machines (--from): the findings
the text points to come first and say what backs them; an error no signature knows is said to be
unknown, with what the check found and the bug-report lines; bad input is one line and exit 2;
secrets the text carries reach no output.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.cli_support import Run, run_cli
from tests.corpus_support import entries, why_score
from tests.fixture_support import FIXTURES

OLD_DRIVER = str(FIXTURES / "linux-driver470-cu124-too-old.json")
HEALTHY = str(FIXTURES / "linux-a100-healthy.json")
DRIVER_ERROR = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 3, in <module>\n'
    "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update "
    "your GPU driver by downloading and installing a new version from the URL: "
    "http://www.nvidia.com/Download/index.aspx\n"
)


class _Stdin(io.TextIOWrapper):
    def __init__(self, data: bytes, tty: bool = False) -> None:
        super().__init__(io.BytesIO(data), encoding="utf-8")
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def _why(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, stdin: bytes | None, *argv: str
) -> Run:
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", _Stdin(stdin))
    return run_cli(capsys, monkeypatch, "why", *argv)


def test_the_finding_the_error_points_to_comes_first_backed_by_both(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _why(capsys, monkeypatch, DRIVER_ERROR.encode(), "--from", OLD_DRIVER, "-f", "json")
    assert run.code == 1, run.err
    data = json.loads(run.out)
    first = data["findings"][0]
    assert (first["code"], first["support"]) == ("ED101", "both")
    assert data["why"]["known"] and "driver-too-old" in data["why"]["signatures"]
    assert all(f.get("support") in ("both", "text", "facts") for f in data["findings"])


def test_a_cause_the_facts_do_not_show_is_said_to_rest_on_the_text(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _why(capsys, monkeypatch, DRIVER_ERROR.encode(), "--from", HEALTHY)
    assert run.code == 1, run.err
    assert "Explaining the error from standard input" in run.out
    assert "ED101" in run.out and "this machine's facts do not show it" in run.out
    assert "line 3" in run.out  # where in the text it was seen


def test_an_unknown_error_is_said_to_be_unknown_with_the_check_and_bug_report_lines(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log = tmp_path / "log.txt"
    log.write_text("ValueError: my own code raised this\n", encoding="utf-8")
    run = _why(capsys, monkeypatch, None, str(log), "--from", HEALTHY)
    assert run.code == 0, run.err  # the check's own verdict: nothing wrong here
    assert "envdoctor does not know this error" in run.out
    assert "To report the error" in run.out and "NVIDIA driver: 550.54.15" in run.out
    markdown = _why(capsys, monkeypatch, None, str(log), "--from", HEALTHY, "-f", "markdown")
    assert "does not know this error" in markdown.out and "```text" in markdown.out


def test_json_is_checks_schema_with_what_backs_each_finding(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib import resources

    schema = json.loads(resources.files("envdoctor").joinpath("schemas", "report-1.json").read_text())
    run = _why(capsys, monkeypatch, DRIVER_ERROR.encode(), "--from", HEALTHY, "-f", "json")
    data = json.loads(run.out)
    jsonschema.Draft202012Validator(schema).validate(data)
    assert data["schema"] == "envdoctor.report/1" and data["findings"][0]["support"] == "text"


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"", "nothing to explain: it is empty"),
        (b"   \n\n\t\n", "nothing to explain: it is empty"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00binary", "not text (it holds NUL bytes)"),
    ],
    ids=["empty", "blank", "binary"],
)
def test_bad_input_is_one_line_and_exit_2(
    content: bytes,
    said: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    path = tmp_path / "input"
    path.write_bytes(content)
    for argv in ((str(path),), ("-",)):
        stdin = content if argv == ("-",) else None
        run = _why(capsys, monkeypatch, stdin, *argv, "--from", HEALTHY)
        assert run.code == 2 and said in run.err, run.err
        assert len(run.err.strip().splitlines()) == 1 and "Traceback" not in run.err


def test_missing_files_folders_and_a_terminal_with_nothing_pasted(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cases = {
        str(tmp_path / "nope.txt"): "no such file",
        str(tmp_path): "is a folder",
    }
    for argv, said in cases.items():
        run = _why(capsys, monkeypatch, None, argv, "--from", HEALTHY)
        assert run.code == 2 and said in run.err, run.err
    monkeypatch.setattr(sys, "stdin", _Stdin(b"", tty=True))
    run = run_cli(capsys, monkeypatch, "why", "--from", HEALTHY)
    assert run.code == 2 and "paste the error on standard input" in run.err


@pytest.mark.slow
def test_a_huge_log_is_read_at_its_ends_and_the_error_at_its_end_is_found(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log = tmp_path / "build.log"
    with open(log, "w", encoding="utf-8") as handle:
        for number in range(120_000):  # about 6 MB of noise
            handle.write(f"step {number}: compiling something unremarkable\n")
        handle.write(DRIVER_ERROR)
    run = _why(capsys, monkeypatch, None, str(log), "--from", OLD_DRIVER, "-f", "json")
    data = json.loads(run.out)
    assert data["why"]["truncated"] and data["why"]["read_bytes"] > 5_000_000
    assert data["findings"][0]["code"] == "ED101"
    assert "read the first 64 KiB and the last 960 KiB" in run.err


def test_text_that_is_not_utf8_is_read_gracefully(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    log = tmp_path / "cp1252.log"
    log.write_bytes("Fehler: Gerät nicht gefunden\n".encode("cp1252") + DRIVER_ERROR.encode())
    run = _why(capsys, monkeypatch, None, str(log), "--from", OLD_DRIVER)
    assert run.code == 1 and "ED101" in run.out
    assert "bytes that are not UTF-8 were replaced" in run.err


def test_secrets_in_the_pasted_text_reach_no_output(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "hf_" + "whySecretPLANTED" * 3
    password = "whyPasswordPLANTED7"
    text = (
        f"Looking in indexes: https://ci:{password}@pkgs.example.invalid/simple\n"
        f"HF_TOKEN={token}\n" + DRIVER_ERROR
    )
    for fmt in ("console", "json", "markdown"):
        run = _why(capsys, monkeypatch, text.encode(), "--from", HEALTHY, "-f", fmt)
        assert token not in run.out + run.err and password not in run.out + run.err, fmt


def test_why_is_in_the_help(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    shown = run_cli(capsys, monkeypatch, "why", "--help")
    assert shown.code == 0 and "[FILE]" in shown.out and "--from" in shown.out
    root = run_cli(capsys, monkeypatch, "--help")
    assert " why " in root.out


def test_why_explains_at_least_90_percent_of_the_corpus_errors() -> None:
    """Every corpus entry whose error text carries evidence of its cause: `envdoctor why` on that
    text and the reporter's machine puts the thread's finding first."""
    judged = [e for e in entries() if e.why and e.error.strip()]
    assert len(judged) >= 150, f"the corpus holds {len(judged)} error texts"
    result = why_score()
    assert result.ratio >= 0.90, "\n".join(f"{n}: {w}" for n, w in result.misses)
