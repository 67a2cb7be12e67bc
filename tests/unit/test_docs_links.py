# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every relative link of the README, docs/*.md and the role READMEs resolves.

A Markdown link ``[text](target)`` whose target is no http(s) or mailto address must name a file or directory
that exists, relative to the linking file's directory (a bare ``#anchor`` is the linking file itself), and its
``#anchor``, when it points into a Markdown file, must be one of that file's heading anchors as GitHub makes
them: lowercase, every character but letters, digits, spaces, hyphens and underscores removed, spaces turned
into hyphens, and a repeated heading numbered ``-1``, ``-2``, ... Links inside fenced code blocks and inline
code are no links.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
LINK = re.compile(r"!?\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)(?:[ \t]+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)
EXTERNAL = ("http://", "https://", "mailto:")


def markdown_files() -> list[Path]:
    """The files whose links are checked: the README, docs/, and every role's README (the harness's too)."""
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    files += sorted(ROOT.glob("roles/*/README.md")) + sorted(ROOT.glob("harness/roles/*/README.md"))
    return files


def outside_fences(text: str) -> list[str]:
    """``text``'s lines with its fenced code blocks blanked (line numbers kept)."""
    lines: list[str] = []
    fence = ""
    for line in text.splitlines():
        opening = FENCE.match(line)
        if fence:
            closing = opening is not None and opening.group(1).startswith(fence) and not line.strip(" `~")
            if closing:
                fence = ""
            lines.append("")
        elif opening:
            fence = opening.group(1)
            lines.append("")
        else:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text (before duplicates are numbered)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


@lru_cache(maxsize=None)
def anchors(path: Path) -> frozenset[str]:
    """Every anchor a Markdown file has: its headings' slugs, repeated ones numbered, and explicit HTML anchors."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    text = path.read_text(encoding="utf-8")
    for line in outside_fences(text):
        heading = HEADING.match(line)
        if heading:
            base = slug(heading.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    found.update(HTML_ANCHOR.findall(text))
    return frozenset(found)


def links(path: Path) -> list[tuple[int, str]]:
    """Every link target of a Markdown file outside code, with the line it starts on."""
    text = "\n".join(CODE_SPAN.sub("code", line) for line in outside_fences(path.read_text(encoding="utf-8")))
    return [(text.count("\n", 0, match.start()) + 1, match.group("target")) for match in LINK.finditer(text)]


def problem(source: Path, target: str) -> str | None:
    """What is wrong with a link from ``source`` to ``target``, or None when it resolves."""
    if target.lower().startswith(EXTERNAL):
        return None
    file_part, _, anchor = target.partition("#")
    destination = (source.parent / unquote(file_part)).resolve() if file_part else source
    if not destination.exists():
        return f"{file_part} does not exist"
    if anchor and destination.suffix == ".md" and unquote(anchor) not in anchors(destination):
        return f"{destination.relative_to(ROOT)} has no heading with the anchor #{anchor}"
    return None


@pytest.mark.parametrize("path", markdown_files(), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path) -> None:
    broken = [f"line {line}: ({target}): {why}" for line, target in links(path) if (why := problem(path, target))]
    assert not broken, f"{path.relative_to(ROOT)}:\n" + "\n".join(broken)


def test_the_readme_links_every_docs_file() -> None:
    targets = {target.partition("#")[0] for _, target in links(ROOT / "README.md")}
    missing = [path.name for path in sorted((ROOT / "docs").glob("*.md")) if f"docs/{path.name}" not in targets]
    assert not missing, f"README.md's Documentation list lacks {missing}"


def test_the_slugs_are_githubs() -> None:
    assert slug("Your script's own packages (3-node sim cluster)") == "your-scripts-own-packages-3-node-sim-cluster"
    assert slug("Intel GPUs (`launcher_backend: xccl`)") == "intel-gpus-launcher_backend-xccl"
    assert slug("Re-runs: one check, drift still repaired") == "re-runs-one-check-drift-still-repaired"
