"""The GitHub Action (issue 21 §2): action.yml's steps run as a runner runs a composite action, with a
simulated GITHUB_* environment: the annotations on stdout, the Markdown report appended to the job
summary, the exit-code output, and the step's result per fail-on."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
ACTION: dict[str, Any] = YAML(typ="safe").load((ROOT / "action.yml").read_text(encoding="utf-8"))
_EXPRESSION = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.name == "nt", reason="the action's steps are bash")]


@dataclass
class Run:
    code: int  # the last step's exit status: the action's result
    stdout: str
    summary: str
    outputs: dict[str, str]


def _outputs(path: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in path.read_text(encoding="utf-8").splitlines() if "=" in line)
    return dict(pairs)


def run_action(tmp_path: Path, **given: str) -> Run:
    """Every step of the composite action in order, as the runner would: `${{ inputs.* }}` from the
    inputs (defaults filled in), `${{ steps.ID.outputs.* }}` from each step's $GITHUB_OUTPUT."""
    inputs = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    unknown = set(given) - set(inputs)
    assert not unknown, f"the action has no inputs {unknown}"
    inputs.update(given)
    summary = tmp_path / "summary.md"
    summary.write_text("", encoding="utf-8")
    steps: dict[str, dict[str, str]] = {}
    stdout = ""
    code = 0

    def value(expression: str) -> str:
        parts = expression.split(".")
        if parts[0] == "inputs":
            return inputs[parts[1]]
        if parts[0] == "steps":
            return steps.get(parts[1], {}).get(parts[3], "")
        if parts[:2] == ["github", "action_path"]:
            return str(ROOT)
        raise AssertionError(f"an expression the test runner does not know: {expression}")

    for number, step in enumerate(ACTION["runs"]["steps"]):
        assert ACTION["runs"]["using"] == "composite" and step["shell"] == "bash"
        output = tmp_path / f"output-{number}"
        output.write_text("", encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "VIRTUAL_ENV"))}
        env.update(
            GITHUB_ACTIONS="true",
            CI="true",
            GITHUB_OUTPUT=str(output),
            GITHUB_STEP_SUMMARY=str(summary),
            RUNNER_TEMP=str(tmp_path),
            ENVDOCTOR_OFFLINE="1",
        )
        env.update(
            {k: _EXPRESSION.sub(lambda m: value(m.group(1)), str(v)) for k, v in step.get("env", {}).items()}
        )
        assert "${{" not in step["run"], "the scripts take inputs through env, never inline (injection)"
        done = subprocess.run(
            # As the runner runs `shell: bash`.
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            env=env, cwd=tmp_path, capture_output=True, text=True,
            timeout=300, check=False,
        )  # fmt: skip
        assert "Traceback" not in done.stderr, done.stderr
        stdout += done.stdout
        steps[step.get("id", str(number))] = _outputs(output)
        code = done.returncode
        if code != 0:
            break  # a failed step ends the action
    return Run(code, stdout, summary.read_text(encoding="utf-8"), steps.get("check", {}))


ENVDOCTOR = f"{shlex.quote(sys.executable)} -m envdoctor"


def snapshot(name: str) -> str:
    return f"--from {FIXTURES / f'{name}.json'}"


def test_a_healthy_runner_passes_with_the_report_in_the_summary(tmp_path: Path) -> None:
    done = run_action(
        tmp_path,
        envdoctor=ENVDOCTOR,
        args=snapshot("linux-rtx4090-driver535-cu121-healthy"),
        **{"expect-gpu": "true", "expect-cuda": ">=12.1"},
    )
    assert done.code == 0 and done.outputs["exit-code"] == "0"
    assert "::error" not in done.stdout
    assert done.summary.startswith("## envdoctor") or "envdoctor" in done.summary.splitlines()[0]
    assert "| Area | Verdict |" in done.summary  # the Markdown report, appended


def test_errors_fail_the_step_with_annotations_and_the_summary(tmp_path: Path) -> None:
    done = run_action(tmp_path, envdoctor=ENVDOCTOR, args=snapshot("linux-rtx3090-no-torch"))
    assert done.code == 1 and done.outputs["exit-code"] == "1"
    assert re.search(r"^::error title=ED001 ", done.stdout, re.M), done.stdout
    assert "ED001" in done.summary


def test_unmet_expectations_fail_the_step(tmp_path: Path) -> None:
    done = run_action(
        tmp_path, envdoctor=ENVDOCTOR, args=snapshot("linux-rtx4090-driver535-cu121-healthy"),
        **{"expect-min-gpus": "2"},
    )  # fmt: skip
    assert done.code == 1 and "::error" in done.stdout


@pytest.mark.parametrize(("fail_on", "code"), [("error", 0), ("warning", 1)])
def test_fail_on_decides_whether_warnings_fail(tmp_path: Path, fail_on: str, code: int) -> None:
    done = run_action(
        tmp_path, envdoctor=ENVDOCTOR, args=snapshot("linux-driver550-cu126-minor-compat"),
        **{"fail-on": fail_on},
    )  # fmt: skip
    assert done.code == code and "::warning title=ED102 " in done.stdout


def test_a_bad_fail_on_is_one_annotation_and_exit_2(tmp_path: Path) -> None:
    done = run_action(tmp_path, envdoctor=ENVDOCTOR, **{"fail-on": "sometimes"})
    assert (
        done.code == 2
        and "::error title=envdoctor::fail-on: 'sometimes' is not error or warning" in done.stdout
    )


def test_the_readme_and_the_ci_docs_show_the_action() -> None:
    for page in (ROOT / "README.md", ROOT / "docs" / "integrations.md"):
        assert "uses: envdoctor/envdoctor@" in page.read_text(encoding="utf-8"), page.name
