"""Expectations and settings: every value validated up front, files found and merged, options win."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envdoctor.engine import registry_names
from envdoctor.probes import PROBES
from envdoctor.settings import (
    ConfigError,
    ExpectationError,
    Expectations,
    SettingsError,
    from_keywords,
    load_config,
    parse_size,
    resolve,
)

NAMES = registry_names()  # the registries' rule codes and probe names, as check and the API pass them


def _resolve(tmp_path: Path, config: str | None = None, **options: object) -> object:
    return resolve(
        {k.replace("_", "-"): v for k, v in options.items()}, cwd=str(tmp_path), names=NAMES, config=config
    )


def test_options_become_typed_expectations(tmp_path: Path) -> None:
    settings = _resolve(
        tmp_path,
        require_gpu=True,
        min_gpus="2",
        require_cuda=" >=12.1 ",
        require_torch=">=2.4,<2.6",
        require_capability=">=8.0",
        min_gpu_memory="24GiB",
        require_smoke=True,
        ignore="ED203,cuda-build-but-cuda-unavailable, ed104",
        skip="nvml",
    )
    assert settings.expectations == Expectations(
        gpu=True,
        min_gpus=2,
        cuda=">=12.1",
        torch=">=2.4,<2.6",
        capability=">=8.0",
        min_gpu_memory="24GiB",
        smoke=True,
    )
    assert settings.expectations.min_gpu_memory_bytes == 24 * 2**30
    assert settings.ignore == ("ED203", "ED104")  # a name maps to its code; repeats collapse
    assert settings.probe_names(("system", "python", "nvml", "torch")) == ("system", "python", "torch")


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("require-cuda", "12.1", 'did you mean ">=12.1"'),
        ("require-cuda", "=>12.1", 'expected e.g. ">=12.1"'),
        ("require-cuda", "", "not a version specifier"),
        ("require-torch", ">=2.4;<2.6", 'expected e.g. ">=2.4,<2.6"'),
        ("require-capability", "sm_80", 'expected e.g. ">=8.0"'),
        ("min-gpus", "two", "not a whole number"),
        ("min-gpus", "0", "at least 1"),
        ("min-gpus", "-1", "not a whole number"),
        ("min-gpu-memory", "24", "not a size with a unit"),
        ("min-gpu-memory", "24 parsecs", "not a size with a unit"),
        ("min-gpu-memory", "0GiB", "not a size with a unit"),
        ("ignore", "ED999", "ED999 is not a rule"),
        ("only", "gpu", f"gpu is not a probe (known: {', '.join(p.name for p in PROBES)})"),
    ],
)
def test_a_bad_option_names_key_value_and_a_valid_example(
    tmp_path: Path, key: str, value: str, says: str
) -> None:
    with pytest.raises(ExpectationError) as caught:
        resolve({key: value}, cwd=str(tmp_path), names=NAMES)
    message = str(caught.value)
    assert message.startswith(f"--{key} {value!r}: ")
    assert says in message
    assert "expected e.g." in message
    assert "\n" not in message


def test_only_and_skip_exclude_each_other(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="--only and --skip cannot be combined"):
        resolve({"only": "torch", "skip": "nvml"}, cwd=str(tmp_path), names=NAMES)


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("24GiB", 24 * 2**30),
        ("24 gib", 24 * 2**30),
        ("24G", 24 * 2**30),
        ("24GB", 24 * 10**9),
        ("1.5TiB", int(1.5 * 2**40)),
        ("512MiB", 512 * 2**20),
        ("4096B", 4096),
    ],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@given(st.integers(min_value=1, max_value=10**6), st.sampled_from(["KiB", "MiB", "GiB", "TiB"]))
def test_binary_sizes_scale_by_1024(number: int, unit: str) -> None:
    power = ["KiB", "MiB", "GiB", "TiB"].index(unit) + 1
    assert parse_size(f"{number}{unit}") == number * 1024**power


def test_pyproject_table_is_found_in_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.envdoctor]\nrequire-gpu = true\nmin_gpus = 2\nignore = ["ED104"]\n',
        encoding="utf-8",
    )
    settings = _resolve(tmp_path)
    assert settings.expectations.gpu is True
    assert settings.expectations.min_gpus == 2  # snake_case keys are accepted too
    assert settings.ignore == ("ED104",)
    assert settings.config_file == "pyproject.toml [tool.envdoctor]"


def test_pyproject_without_the_table_is_no_config(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    assert load_config(None, str(tmp_path)) is None
    assert _resolve(tmp_path).expectations == Expectations()


def test_envdoctor_toml_wins_over_pyproject_and_keeps_keys_at_the_top(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.envdoctor]\nmin-gpus = 8\n", encoding="utf-8")
    (tmp_path / "envdoctor.toml").write_text('min-gpus = 2\nrequire-cuda = ">=12.1"\n', encoding="utf-8")
    settings = _resolve(tmp_path)
    assert settings.expectations.min_gpus == 2
    assert settings.config_file == "envdoctor.toml"


def test_command_line_wins_key_by_key(tmp_path: Path) -> None:
    (tmp_path / "envdoctor.toml").write_text(
        'require-gpu = true\nmin-gpus = 4\nrequire-cuda = ">=12.1"\nstrict = true\n', encoding="utf-8"
    )
    settings = _resolve(tmp_path, require_gpu=False, min_gpus="2", strict=None)
    assert settings.expectations.gpu is False  # --no-require-gpu beats the file's true
    assert settings.expectations.min_gpus == 2
    assert settings.expectations.cuda == ">=12.1"  # not given on the command line: the file's
    assert settings.strict is True


def test_explicit_config_file(tmp_path: Path) -> None:
    path = tmp_path / "ci" / "gpu.toml"
    path.parent.mkdir()
    path.write_text('[tool.envdoctor]\nrequire-torch = ">=2.4"\n', encoding="utf-8")
    settings = _resolve(tmp_path, config=str(path))
    assert settings.expectations.torch == ">=2.4"


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("require-gpus = true\n", "unknown key 'require-gpus'; did you mean 'require-gpu'?"),
        ("require-gpu = \n", "not valid TOML"),
        ('require-gpu = "yes"\n', "require-gpu = 'yes': not true or false; expected e.g. true"),
        ("min-gpus = 1.5\n", "min-gpus = 1.5: not a whole number"),
        ("min-gpu-memory = 24\n", "min-gpu-memory = 24: not a size with a unit (write it as a string)"),
        ('require-cuda = "12.1"\n', "require-cuda = '12.1': a bare version is not a specifier"),
        ('ignore = ["ED203", 5]\n', "not a list of rule codes"),
        ("only = []\n", "not a list of probe names"),
    ],
)
def test_a_bad_config_value_names_the_file_and_key(tmp_path: Path, content: str, says: str) -> None:
    (tmp_path / "envdoctor.toml").write_text(content, encoding="utf-8")
    with pytest.raises(SettingsError) as caught:
        _resolve(tmp_path)
    message = str(caught.value)
    assert message.startswith("envdoctor.toml")
    assert says in message
    assert "\n" not in message


def test_explicit_config_that_is_missing_a_folder_or_lacks_the_table(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        _resolve(tmp_path, config=str(tmp_path / "nope.toml"))
    with pytest.raises(ConfigError, match="is a folder"):
        _resolve(tmp_path, config=str(tmp_path))
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"has no \[tool.envdoctor\] table"):
        _resolve(tmp_path, config=str(tmp_path / "pyproject.toml"))


def test_unreadable_config_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "envdoctor.toml").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ConfigError, match=r"^envdoctor.toml: cannot be read"):
        _resolve(tmp_path)


def test_keywords_of_the_python_api() -> None:
    settings = from_keywords(
        {"gpu": True, "cuda": ">=12.1", "min_gpus": 2, "smoke": False, "torch": None}, NAMES
    )
    assert settings.expectations == Expectations(gpu=True, cuda=">=12.1", min_gpus=2)
    with pytest.raises(ExpectationError, match=r"^envdoctor.require\(cuda='12.1'\): a bare version"):
        from_keywords({"cuda": "12.1"}, NAMES)
    with pytest.raises(ExpectationError, match=r"^envdoctor.require\(min_gpus=True\): not a whole number"):
        from_keywords({"min_gpus": True}, NAMES)
    with pytest.raises(TypeError, match="unexpected keyword argument 'gpus'"):
        from_keywords({"gpus": 2}, NAMES)


def test_expectation_items_use_the_option_names() -> None:
    expect = Expectations(gpu=True, cuda=">=12.1", min_gpu_memory="24GiB")
    assert expect.items() == (("require-gpu", True), ("require-cuda", ">=12.1"), ("min-gpu-memory", "24GiB"))
    assert expect.stated and expect.needs_gpu
    assert not Expectations().stated
    assert not Expectations(cuda=">=12.1").needs_gpu
