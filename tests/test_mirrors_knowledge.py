"""The mirror table: recognition by URL, the PyTorch-wheel index per operator, data consistency."""

from __future__ import annotations

import pytest

from envdoctor.knowledge import load_table, mirrors


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("https://pypi.tuna.tsinghua.edu.cn/simple", "tuna"),
        ("https://PYPI.tuna.tsinghua.edu.cn/simple/", "tuna"),
        ("pypi.tuna.tsinghua.edu.cn/simple", "tuna"),
        ("https://user:s3cret@mirrors.aliyun.com/pypi/simple/", "aliyun"),
        ("https://mirrors.aliyun.com/pytorch-wheels/cu121", "aliyun-pytorch"),
        ("https://download.pytorch.org/whl/cu124", "official-pytorch"),
        ("https://mirrors.nju.edu.cn/pytorch/whl/cu126", "nju-pytorch"),
        ("https://mirror.sjtu.edu.cn/anaconda/cloud/pytorch", "sjtu-conda"),
        ("https://mirrors.tuna.tsinghua.edu.cn/anaconda/cloud/pytorch/", "tuna-conda"),
    ],
)
def test_recognise_known_indexes(url: str, name: str) -> None:
    found = mirrors.recognise(url)
    assert found is not None and found.name == name


@pytest.mark.parametrize("url", ["https://example.com/simple", "", "not a url at all", "http://[::1"])
def test_unknown_or_bad_urls_are_not_recognised(url: str) -> None:
    assert mirrors.recognise(url) is None


def test_prefix_must_end_at_a_path_boundary() -> None:
    assert mirrors.recognise("https://download.pytorch.org/whlx/cu124") is None


def test_wheel_mirrors_per_operator() -> None:
    sjtu = mirrors.pytorch_wheel_mirror("SJTU")
    assert sjtu is not None and sjtu.kind == "pytorch-wheels"
    assert mirrors.pytorch_wheel_url(sjtu, "cu124") == "https://mirror.sjtu.edu.cn/pytorch-wheels/cu124"
    assert mirrors.pytorch_wheel_mirror("tuna") is None  # TUNA runs no PyTorch wheel index
    assert mirrors.official_wheel_url("cpu") == "https://download.pytorch.org/whl/cpu"
    assert mirrors.is_official_pytorch_index("https://download.pytorch.org/whl/cu121/")
    assert not mirrors.is_official_pytorch_index(mirrors.pytorch_wheel_url(sjtu, "cu121"))


def test_conda_channel_cut_off() -> None:
    assert mirrors.conda_channel_last_torch("pytorch") == "2.5.1"
    assert mirrors.conda_channel_last_torch("conda-forge") is None


def test_pypi_default_comes_from_pip_metadata() -> None:
    url = mirrors.pypi_default_url()
    assert url is None or (url.startswith("https://") and url.endswith("/simple"))


def test_table_is_consistent() -> None:
    table = load_table("mirrors.json")
    assert table["source"] and table["as_of"]
    names = {i.name for i in mirrors.known_indexes()}
    for index in mirrors.known_indexes():
        assert index.kind in {"pypi", "conda", "pytorch-wheels", "vendor-wheels"}
        assert index.status in {"ok", "stale", "dropped", "unverified"}
        assert index.url.startswith("https://") and index.note
    for operator, target in table["pytorch_wheel_mirrors"].items():
        if not operator.startswith("_") and target is not None:
            assert target in names, operator
    assert set(mirrors.pytorch_wheel_mirror_names()) >= {"sjtu", "nju", "aliyun", "tuna"}


def test_layout_and_missing_channels() -> None:
    indexes = mirrors.known_indexes()
    assert {i.layout for i in indexes} == {"pep503", "flat"}
    assert [i.name for i in indexes if i.flat] == ["aliyun-pytorch"]  # mirror_facts.md 4.3 [weak]
    assert all(i.kind == "pytorch-wheels" for i in indexes if i.flat)
    assert all(i.kind == "conda" for i in indexes if i.channels_missing)
    ustc = mirrors.recognise("https://mirrors.ustc.edu.cn/anaconda/cloud/conda-forge")
    assert ustc is not None and ustc.status == "ok" and ustc.channels_missing == ("pytorch",)
