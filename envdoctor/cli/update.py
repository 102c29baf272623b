"""`envdoctor update`: the command's options and output. The work is in envdoctor/update/, imported
only when the command runs, so `--help` and the other commands never load the network code."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn, Optional

import typer

from envdoctor.cli.help import COMMAND_HELP

if TYPE_CHECKING:
    from envdoctor.update.refresh import Outcome, Sources


def sources(index_url: str | None, pytorch_index: str | None) -> Sources:
    """The indexes to read: the options, else pip's configured index-url, else pip's default."""
    from envdoctor.knowledge.mirrors import OFFICIAL_WHEEL_BASE, pypi_default_url
    from envdoctor.update.refresh import Sources

    wheels = pytorch_index or OFFICIAL_WHEEL_BASE
    if index_url:
        return Sources(wheels, index_url, "given with --index-url")
    from envdoctor.host.live import LiveHost
    from envdoctor.install.detect import configured_pip_index

    configured = configured_pip_index(LiveHost(), None)
    if configured is not None:
        return Sources(wheels, configured.url, f"pip's index-url ({configured.where})")
    default = pypi_default_url()
    if default is not None:
        return Sources(wheels, default, "pip's default index")
    return Sources(wheels, None, "none: pip is not installed here (pass --index-url)")


def render(outcome: Outcome, given: Sources) -> str:
    from envdoctor import knowledge
    from envdoctor.util.urls import safe_url

    lines = [
        f"envdoctor update: read {outcome.pages} index pages and {outcome.metadata} metadata files "
        f"in {outcome.seconds:.1f} s",
        f"  PyTorch index   {safe_url(given.pytorch_index)}",
        f"  Default index   {safe_url(given.default_index) if given.default_index else '-'}"
        f" ({given.default_origin})",
    ]
    newest = knowledge.builtin_releases()[-1].torch
    if outcome.new:
        lines.append(f"New releases beyond envdoctor's data (up to {newest}):")
        for release in outcome.new:
            companions = ", ".join(
                f"{name} {version}"
                for name, version in (
                    ("torchvision", release.torchvision),
                    ("torchaudio", release.torchaudio),
                )
                if version
            )
            lines.append(f"  torch {release.torch}" + (f" ({companions})" if companions else ""))
            for platform, variants in release.platforms:
                lines.append(f"    {platform:<15} {' '.join(variants)}")
            if release.new_variants:
                lines.append(f"    new variants: {' '.join(release.new_variants)}")
    else:
        lines.append(f"No torch release beyond envdoctor's data (up to {newest}) on these indexes.")
    if outcome.assumed:
        lines.append("Assumed (an index cannot tell; carried forward from the nearest known build):")
        lines += [f"  {line}" for line in outcome.assumed]
    if outcome.failures:
        lines.append(f"Not read ({len(outcome.failures)}):")
        lines += [f"  {safe_url(f.url)}: {f.error}" for f in outcome.failures[:8]]
        if len(outcome.failures) > 8:
            lines.append(f"  ... and {len(outcome.failures) - 8} more")
    lines.append(f"Written: {outcome.path}")
    if outcome.failures:
        lines.append(
            f"Partial update: {len(outcome.failures)} page(s) not read; what the overlay knew from them "
            "is kept (nothing read is taken for absent). Run `envdoctor update` again to read them (exit 1)."
        )
    return "\n".join(lines) + "\n"


def register(app: typer.Typer, fail: Callable[[str], NoReturn]) -> None:
    """Add the `update` command to `app`; `fail` prints one error line and exits 2."""

    @app.command("update", help=COMMAND_HELP["update"])
    def update(
        index_url: Optional[str] = typer.Option(
            None,
            "--index-url",
            help="The default index to read (a simple index URL); default: pip's.",
            metavar="URL",
        ),
        pytorch_index: Optional[str] = typer.Option(
            None,
            "--pytorch-index",
            help="PyTorch's wheel index or a mirror of it: variant pages below it (default: PyTorch's).",
            metavar="URL",
        ),
        offline: bool = typer.Option(False, "--offline", help="Refuse: an update needs the network."),
        timeout: float = typer.Option(
            30.0, "--timeout", help="Seconds the whole update may take.", metavar="SECONDS"
        ),
    ) -> None:
        import sys

        from envdoctor.knowledge.overlay import overlay_path
        from envdoctor.update.refresh import UpdateError, refresh

        stop = fail
        if offline:
            stop(
                "--offline: `envdoctor update` reads the package indexes and needs the network; "
                "envdoctor keeps using its built-in data (and any overlay written before)"
            )
        if not 1 <= timeout <= 600:
            stop(f"--timeout {timeout:g}: expected seconds between 1 and 600")
        for name, url in (("--index-url", index_url), ("--pytorch-index", pytorch_index)):
            if url is not None and not url.startswith(("http://", "https://", "file:")):
                stop(f"{name} {url}: expected an http(s):// or file: URL")
        path = overlay_path()
        if path is None:
            stop("no cache folder: set ENVDOCTOR_CACHE_DIR (or XDG_CACHE_HOME / LOCALAPPDATA)")
        given = sources(index_url, pytorch_index)
        try:
            outcome = refresh(given, str(path), deadline_s=timeout)
        except UpdateError as exc:
            stop(str(exc))
        sys.stdout.write(render(outcome, given))
        if outcome.failures:  # partial: said, and exit 1, so that a script sees it
            raise typer.Exit(1)
