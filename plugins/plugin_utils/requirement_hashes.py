# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether the ``--hash`` lines of a requirements file can match at all, asked of the places pip looks before any node
changes: for each ``name==version`` with hashes, the files of that release on its indexes (PEP 691 JSON, else PEP 503
HTML and its ``#sha256=`` fragments) and find-links (a page, or local files, hashed here).

The nodes' Python and platform are unknown then, so a hash matching any file of the release passes; only a release
whose every file, on every platform, has none of the hashes is wrong. Whatever cannot be judged (a place that does
not answer, a release no place lists, a hash of an algorithm a place does not give, a requirement with a URL, a
marker or no ``==``) is left to the layer build (plugin_utils/layer_build.py), which checks the nodes' very files.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import posixpath
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

# ansible-core depends on packaging; a controller without it (or ansible-test's import check) judges nothing here.
try:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.specifiers import SpecifierSet
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename
    from packaging.version import InvalidVersion, Version
except ImportError:
    HAS_PACKAGING = False
else:
    HAS_PACKAGING = True

from ansible.module_utils.urls import ConnectionError as UrlConnectionError
from ansible.module_utils.urls import open_url

from ansible_collections.multinode.training.plugins.module_utils import requirements_layer as layers
from ansible_collections.multinode.training.plugins.plugin_utils.layer_build import pip_config

PYPI = "https://pypi.org/simple/"
# Seconds each request may wait for the place to answer, and how many requests are in flight at once.
TIMEOUT = 5.0
WORKERS = 8
PEP691 = "application/vnd.pypi.simple.v1+json"
INDEX_ACCEPT = f"{PEP691}, application/vnd.pypi.simple.v1+html;q=0.1, text/html;q=0.01"
PAGE_ACCEPT = "text/html"
INDEX_OPTIONS = frozenset({"-i", "--index-url", "--extra-index-url"})
# The source archives pip takes, besides wheels.
ARCHIVES = (".tar.gz", ".tgz", ".tar.bz2", ".tbz", ".tar.xz", ".txz", ".tlz", ".tar.lz", ".tar.lzma", ".tar", ".zip")
# The controller's pip settings that add places to look (its no-index is left out: one more place never refuses).
CONTROLLER_SOURCES = (("--index-url", "PIP_INDEX_URL"), ("--extra-index-url", "PIP_EXTRA_INDEX_URL"), ("--find-links", "PIP_FIND_LINKS"))


class Unanswered(Exception):
    """A place that gave no list of files for a project: nothing can be judged there."""


class Unreachable(Unanswered):
    """A place that cannot be reached at all: it is not asked again."""


@dataclass(frozen=True)
class Pinned:
    """A requirement pinned to releases by one ``==`` (``requirement`` as written), with the hashes
    (``algorithm:hex``) its file may have."""

    requirement: str
    name: str
    specifier: SpecifierSet
    hashes: frozenset[str]

    def is_file_of(self, filename: str) -> bool:
        """Whether ``filename`` is a file of the pinned release, as pip reads wheel and source archive names."""
        version = file_version(filename, self.name)
        return version is not None and self.specifier.contains(version, prereleases=True)


@dataclass(frozen=True)
class Place:
    """Where pip looks: an index (a page per project) or a find-links location (a page, directory or file)."""

    location: str
    index: bool

    def __str__(self) -> str:
        return without_credentials(self.location)


@dataclass(frozen=True)
class ListedFile:
    """A file a place lists: its name, the hashes the place gives for it (algorithm -> hex), its path when local."""

    filename: str
    hashes: Mapping[str, str]
    path: Path | None = None

    def digest(self, algorithm: str) -> str | None:
        """The file's ``algorithm`` hash: given, or computed for a local file; None when neither can be."""
        if algorithm in self.hashes:
            return self.hashes[algorithm].lower()
        if self.path is None or algorithm not in hashlib.algorithms_guaranteed:
            return None
        try:
            with self.path.open("rb") as stream:
                return hashlib.file_digest(stream, algorithm).hexdigest()
        except OSError:
            return None


def pinned_requirements(options: layers.FileOptions) -> list[Pinned]:
    """The requirements with ``--hash`` lines that pin one release (``name==version``, no URL, no marker: the nodes'
    Python is unknown here), each with every hash the files give its name."""
    pinned: dict[str, Pinned] = {}
    for line in options.hashed:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        specifiers = list(requirement.specifier)
        hashes = options.hashes.get(layers.canonical_name(requirement.name))
        if requirement.url or requirement.marker or len(specifiers) != 1 or specifiers[0].operator != "==" or not hashes:
            continue
        text = f"{requirement.name}{requirement.specifier}"
        pinned[text] = Pinned(text, layers.canonical_name(requirement.name), requirement.specifier, hashes)
    return list(pinned.values())


def file_version(filename: str, name: str) -> Version | None:
    """The version of project ``name`` (canonical) ``filename`` is a file of; None for another project's file or one
    pip does not take."""
    try:
        if filename.endswith(".whl"):
            project, version, _build, _tags = parse_wheel_filename(filename)
            return version if project == name else None
        stem = next((filename[: -len(suffix)] for suffix in ARCHIVES if filename.lower().endswith(suffix)), "")
        versions = (stem[at + 1 :] for at, char in enumerate(stem) if char == "-" and layers.canonical_name(stem[:at]) == name)
        version = next(versions, None)
        return Version(version) if version is not None else None
    except (InvalidWheelFilename, InvalidVersion):
        return None


def search_places(options: layers.FileOptions, python: str) -> list[Place]:
    """Where pip looks for the file's packages as the layer build runs it: the indexes and find-links the file names,
    with the controller's pip sources (of ``python``'s pip) unless the file names its own index, and PyPI unless an
    index is named or ``--no-index`` given."""
    pairs = list(options.options)
    if not options.replaces_index():
        settings = layers.pip_settings(os.environ, pip_config(python))
        pairs = [(option, value) for option, variable in CONTROLLER_SOURCES for value in settings.get(variable, "").split()] + pairs
    places = [Place(value, option in INDEX_OPTIONS) for option, value in pairs if value and (option in INDEX_OPTIONS or option in layers.FIND_LINKS)]
    if not layers.FileOptions(tuple(pairs)).replaces_index():
        places.insert(0, Place(PYPI, index=True))
    return list(dict.fromkeys(places))


def listed_files(place: Place, name: str, timeout: float) -> list[ListedFile]:
    """The files ``place`` lists for the project ``name`` (a find-links location: every file it lists)."""
    location = f"{place.location.rstrip('/')}/{name}/" if place.index else place.location
    if "://" in location and not location.startswith("file:"):
        text, content_type, address = fetch(location, INDEX_ACCEPT if place.index else PAGE_ACCEPT, timeout)
        try:
            return json_files(json.loads(text)) if content_type == PEP691 else page_files(text, address)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise Unanswered(f"{place}: {exc}") from exc
    path = Path(urllib.request.url2pathname(urllib.parse.urlsplit(location).path)) if location.startswith("file:") else Path(location)
    return local_files(path / "index.html" if place.index else path)


def local_files(path: Path) -> list[ListedFile]:
    """The files a local place lists: a page's links, a directory's files, a file itself; nothing when it is not there."""
    try:
        if path.is_dir():
            return [ListedFile(entry.name, {}, entry) for entry in sorted(path.iterdir()) if entry.is_file()]
        if not path.is_file():
            return []
        if path.suffix not in (".html", ".htm"):
            return [ListedFile(path.name, {}, path)]
        return page_files(path.read_text(encoding="utf-8", errors="replace"), path.as_uri())
    except OSError as exc:
        raise Unanswered(f"{path}: {exc.strerror}") from exc


class _Links(HTMLParser):
    """The ``href`` of every ``<a>`` of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def page_files(text: str, address: str) -> list[ListedFile]:
    """The files a PEP 503 page (or a find-links page) at ``address`` links to, with the hash of each link's fragment."""
    links = _Links()
    links.feed(text)
    files = []
    for href in links.hrefs:
        url, _hash, fragment = urllib.parse.urljoin(address, href).partition("#")
        algorithm, equals, digest = fragment.partition("=")
        parts = urllib.parse.urlsplit(url)
        local = Path(urllib.request.url2pathname(parts.path)) if parts.scheme == "file" else None
        given = {algorithm: digest} if equals and algorithm in hashlib.algorithms_guaranteed else {}
        files.append(ListedFile(urllib.parse.unquote(posixpath.basename(parts.path)), given, local))
    return files


def json_files(page: Mapping[str, Any]) -> list[ListedFile]:
    """The files of a PEP 691 project page, with their hashes."""
    return [ListedFile(str(item["filename"]), dict(item.get("hashes") or {})) for item in page["files"]]


def fetch(url: str, accept: str, timeout: float) -> tuple[str, str, str]:
    """The text, content type and final address of ``url`` (its credentials sent as basic authentication); no text
    for a page that is not there (404, 410: pip finds nothing there either)."""
    try:
        parts = urllib.parse.urlsplit(url)
        headers = {"Accept": accept}
        if parts.username is not None:
            credentials = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
            headers["Authorization"] = "Basic " + base64.b64encode(credentials.encode()).decode()
        with open_url(without_credentials(url), headers=headers, timeout=timeout, follow_redirects="all") as response:
            charset = response.headers.get_content_charset() or "utf-8"
            return response.read().decode(charset, errors="replace"), response.headers.get_content_type(), response.geturl()
    except urllib.error.HTTPError as exc:
        exc.close()
        if exc.code in (404, 410):
            return "", "text/html", url
        raise Unanswered(f"{without_credentials(url)}: HTTP {exc.code}") from exc
    except (OSError, http.client.HTTPException, ValueError, LookupError, UrlConnectionError) as exc:
        raise Unreachable(f"{without_credentials(url)}: {exc}") from exc


def without_credentials(url: str) -> str:
    """``url`` without the user and password it may carry (to be shown)."""
    parts = urllib.parse.urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl() if "@" in parts.netloc else url


def matches(file: ListedFile, hashes: frozenset[str]) -> bool | None:
    """Whether ``file`` has one of ``hashes``; None when it has none of those it can be asked, but one it cannot."""
    given = [digest.partition(":") for digest in hashes]
    found = {algorithm: file.digest(algorithm) for algorithm in {algorithm for algorithm, _colon, _hex in given}}
    if any(found[algorithm] == hexdigest.lower() for algorithm, _colon, hexdigest in given):
        return True
    return None if None in found.values() else False


def mismatched_at(pinned: Pinned, places: Sequence[Place], timeout: float, unreachable: set[Place]) -> tuple[Place, ...]:
    """The places that list files of ``pinned``'s release when none of those files has one of its hashes and every
    place answered; nothing when one has (or may have), when a place did not answer or when none lists the release."""
    listing: list[Place] = []
    for place in places:
        if place in unreachable:
            return ()
        try:
            files = [file for file in listed_files(place, pinned.name, timeout) if pinned.is_file_of(file.filename)]
        except Unreachable:
            unreachable.add(place)
            return ()
        except Unanswered:
            return ()
        if any(matches(file, pinned.hashes) is not False for file in files):
            return ()
        if files:
            listing.append(place)
    return tuple(listing)


def wrong_hashes(options: layers.FileOptions, python: str, timeout: float = TIMEOUT) -> list[tuple[Pinned, tuple[Place, ...]]]:
    """Each pinned requirement of ``options`` (pinned_requirements) whose hashes match no file of its release where
    pip looks, with the places that list that release: one request per requirement and place, none for a file
    without hashes. Nothing when the controller's pip sources cannot be listed, or without packaging."""
    if not HAS_PACKAGING:
        return []
    pinned = pinned_requirements(options)
    if not pinned:
        return []
    try:
        places = search_places(options, python)
    except (layers.LayerError, OSError):
        return []
    judge = partial(mismatched_at, places=places, timeout=timeout, unreachable=set())
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        found = list(zip(pinned, pool.map(judge, pinned)))
    return [(pin, where) for pin, where in found if where]
