"""A machine like the one issue 10 was tried on, as a FakeHost: pip reads a find-links folder holding
torch-2.13.0+cpu for cp311, two file:// extra indexes (one lists torch 2.14.1 and torchvision
0.28.0-0.29.1, PyPI's builds) and a constraint file capping torch at 2.14.1; PyTorch's wheel host
does not answer, the default index does."""

from __future__ import annotations

from envdoctor.host.base import ChildOutcome, UrlStatus
from envdoctor.knowledge.mirrors import pypi_default_url
from tests.host_builder import Machine

VENV = "/home/user/project/.venv"
PYTHON = f"{VENV}/bin/python"
CONSTRAINTS = "/etc/xdg/pip/constraints.txt"
FIND_LINKS = "/opt/wheels"
LOCAL_TORCH = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
NO_DNS = UrlStatus(None, "Name or service not known")


def _page(*files: str) -> str:
    links = "".join(f'<a href="../../files/{f}#sha256=00">{f}</a>\n' for f in files)
    return f"<!DOCTYPE html><html><body>\n{links}</body></html>\n"


def python_record(version: str = "3.11.9") -> ChildOutcome:
    record = {
        "record": "python",
        "executable": PYTHON,
        "version": version,
        "implementation": "CPython",
        "bits": 64,
        "prefix": VENV,
        "is_venv": True,
        "is_conda": False,
    }
    return ChildOutcome(records=(record,), returncode=0)


NO_DRIVER = ChildOutcome(
    records=({"record": "nvml", "status": "library_not_found", "error": "not found"},), returncode=0
)


def this_machine(
    python: str = "3.11.9", pytorch: UrlStatus = NO_DNS, constraint: str = "torch<=2.14.1"
) -> Machine:
    machine = Machine(env={"VIRTUAL_ENV": VENV, "HOME": "/home/user", "PIP_FIND_LINKS": FIND_LINKS})
    machine.file("/etc/xdg/pip/pip.conf", f"[global]\nconstraint = {CONSTRAINTS}\n")
    machine.file(
        CONSTRAINTS, f"# These releases lie on this machine's disk.\n{constraint}\ntorchvision<=0.29.1\n"
    )
    machine.file(
        "/home/user/.config/pip/pip.conf",
        "[global]\nfind-links = /opt/wheels\n"
        "extra-index-url = file:///opt/pypi/simple file:///opt/pypi-more/simple\n",
    )
    machine.files(FIND_LINKS, LOCAL_TORCH)
    machine.file("/opt/pypi/simple/absl-py/index.html", _page("absl_py-2.5.0-py3-none-any.whl"))
    machine.file(
        "/opt/pypi-more/simple/torch/index.html", _page("torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl")
    )
    machine.file(
        "/opt/pypi-more/simple/torchvision/index.html",
        _page(
            *(
                f"torchvision-{v}-cp311-cp311-manylinux_2_28_x86_64.whl"
                for v in ("0.28.0", "0.29.0", "0.29.1")
            )
        ),
    )
    machine.file(PYTHON)
    machine.folder(f"{VENV}/lib/python{'.'.join(python.split('.')[:2])}/site-packages")
    machine.host.children = {"python_info.py": python_record(python), "nvml_probe.py": NO_DRIVER}
    default = pypi_default_url() or "https://index.invalid/simple"
    machine.host.urls = {"https://download.pytorch.org/": pytorch, default: UrlStatus(200)}
    # The rest of the machine is not there: no PCI bus, and no site-packages of the environment
    # tests.support's probe context names (/home/user/.venv) or of another Python here.
    machine.absent(
        "/sys/bus/pci/devices",
        f"{VENV}/lib/python3.11/site-packages",
        "/home/user/.venv/lib/python3.11/site-packages",
    )
    return machine
