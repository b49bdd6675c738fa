"""Traces where they live: a URL that fsspec resolves (``s3://``, ``gs://``, ``hf://``, ``file://``, a directory or
a glob of them) read as a local file is, through the optional extra ``warpwizard[remote]``.

A remote object is streamed: fsspec's file reads ``BLOCK_BYTES`` ahead at a time (``cache_type="readahead"``), so a
1 GB object is never held whole, and the JSON walker reads it block by block, bounded as a local file is (its
block size, its whitespace and nesting bounds). Credentials come from each store's own standard configuration
(boto's environment and files for S3, Google's for GCS, the Hugging Face token); this module never reads, prints
or records them: an error is our own words and the store's error code, never the client's message (which can
name a key id or an endpoint's query string).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import IO, TYPE_CHECKING, Any, cast

import msgspec

from wizard.errors import InputFileError, MissingDependency
from wizard.untrusted import cut, visible

if TYPE_CHECKING:
    from wizard.trace.read.collector import TraceContents
    from wizard.trace.read.formats import TraceFormat

__all__ = ["UrlIdentity", "expand", "identity", "is_url", "open_url", "read_url"]

BLOCK_BYTES = 8 << 20  # bytes fetched per request: a 1 GB object is streamed in 128 requests, never held whole
MAX_FILES = 100_000  # objects one directory or glob may name (a job's ranks, with room to spare)
MAX_URL = 2048  # characters of a URL taken (S3 keys are at most 1,024 bytes)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")  # two letters at least: C:\ is a Windows path, not a URL
_GLOB = re.compile(r"[*?\[]")
# The stores a trace URL may name: object stores, the web and local files. A URL can come from someone else's
# answers file or report, so what fsspec could also do with one is refused: log in over SSH or SMB with the
# user's own keys, write a local cache (``simplecache::``, ``filecache::``), open archives or chain protocols
# (``::``), run a query against a Dask or GitHub API. Each is one line naming the valid ones.
STORES = ("s3", "s3a", "gs", "gcs", "hf", "az", "abfs", "abfss", "http", "https", "file")


def is_url(name: object) -> bool:
    """Whether ``name`` is a URL for fsspec (``scheme://``) rather than a local path."""
    return isinstance(name, str) and bool(_SCHEME.match(name))


def _web(url: str) -> bool:
    """An http(s) URL, whose ``?`` starts a query (in a store's URL it is a glob's one character)."""
    return url[:8].lower().startswith(("http://", "https://"))


def shown(url: str) -> str:
    """A URL for a message: an http(s) query string (a signed URL's token) left out, controls escaped, cut."""
    return cut(visible(url.split("?", 1)[0] if _web(url) else url), 200)


def _fsspec() -> Any:
    """fsspec, or the one line that says how to install the extra (exit 9 at the CLI)."""
    try:
        import fsspec
    except ImportError:
        raise MissingDependency(_install_words("fsspec")) from None
    return fsspec


def _install_words(what: str) -> str:
    from wizard.extras import install_command

    return f"reading a trace from a URL needs {what}: {install_command('remote')}"


def _filesystem(url: str) -> tuple[Any, str]:
    """(the filesystem, the path in it) for ``url``; an unknown scheme or a store's missing package is one line."""
    if len(url) > MAX_URL:
        raise InputFileError(f"{shown(url)}: not a URL: longer than {MAX_URL} characters")
    scheme = url.split("://", 1)[0].lower()
    if scheme not in STORES or "::" in url:
        valid = ", ".join(f"{s}://" for s in STORES)
        raise InputFileError(f"{shown(url)}: not a store warpwizard reads a trace from: one of {valid}, unchained")
    if _web(url) and "?" in url:  # a signed URL's token is a credential: every report naming the trace would hold it
        raise InputFileError(
            f"{shown(url)}?...: a URL with a query string is not taken (a signed URL's token would be written in the "
            "report): name the object by the store's own URL (s3://, gs://, hf://) and its standard credentials"
        )
    fsspec = _fsspec()
    try:
        return fsspec.core.url_to_fs(url)  # type: ignore[no-any-return]
    except ImportError as exc:  # s3fs, gcsfs, huggingface_hub: fsspec names the package to install
        raise MissingDependency(_install_words(_package(str(exc)))) from None
    except ValueError:
        raise InputFileError(f"{shown(url)}: fsspec knows no such protocol") from None


def _package(message: str) -> str:
    """The package fsspec's ImportError names (``Install s3fs to access S3``), else the words "its package"."""
    found = re.search(r"[Ii]nstall (\S+)", message)
    return found.group(1) if found else "the store's package"


def refused(url: str, exc: BaseException) -> InputFileError:
    """What a store's error means for the user, in one line that holds no credential: a missing object, access
    refused (the credentials), or the error's kind and code."""
    if isinstance(exc, FileNotFoundError):
        return InputFileError(f"{shown(url)}: no such object")
    if isinstance(exc, PermissionError):
        return InputFileError(
            f"{shown(url)}: access refused: the store did not accept the credentials in its standard configuration "
            "(AWS_* variables or ~/.aws for S3, GOOGLE_APPLICATION_CREDENTIALS for GCS, HF_TOKEN for hf://)"
        )
    code = _code(exc)
    return InputFileError(f"{shown(url)}: cannot read ({type(exc).__name__}{f' {code}' if code else ''})")


def _code(exc: BaseException) -> str:
    """A botocore error's code (``NoSuchBucket``): the store's word, which names no credential."""
    response = getattr(exc, "response", None)
    error = response.get("Error") if isinstance(response, dict) else None
    code = error.get("Code") if isinstance(error, dict) else None
    return visible(cut(code, 60)) if isinstance(code, str) else ""


class UrlIdentity(msgspec.Struct, frozen=True, eq=False):
    """Which object a URL named when it was read: what a per-rank summary is reused by (its ETag where the store
    gives one, else its modification time), as a local file's path, size and mtime."""

    url: str
    size: int | None
    etag: str | None
    mtime: str | None


def identity(url: str) -> UrlIdentity:
    """The object's size, ETag and modification time, from one metadata request (no byte of it read)."""
    fs, path = _filesystem(url)
    try:
        info = fs.info(path)
    except Exception as exc:  # noqa: BLE001 (a store's client raises its own kinds: each is said in one line)
        raise refused(url, exc) from None
    if info.get("type") == "directory":
        raise InputFileError(f"{shown(url)}: is a directory")
    size, etag = info.get("size"), info.get("ETag") or info.get("etag")
    mtime = info.get("LastModified") or info.get("mtime") or info.get("last_modified")
    return UrlIdentity(
        url,
        size if isinstance(size, int) else None,
        cut(str(etag).strip('"'), 128) if etag is not None else None,
        cut(str(mtime), 64) if mtime is not None else None,
    )


def expand(url: str) -> list[str]:
    """The trace URLs a URL names: itself, a directory's trace files (not its subdirectories, as for a local
    directory) or a glob's matches, sorted; at most MAX_FILES."""
    from wizard.trace.read.formats import is_trace_name, trace_suffixes

    fs, path = _filesystem(url)
    try:
        if _GLOB.search(path):
            found = [p for p in fs.glob(path) if is_trace_name(p.rsplit("/", 1)[-1])]
        elif fs.isdir(path):
            found = [e["name"] for e in fs.ls(path, detail=True) if e.get("type") == "file"]
            found = [p for p in found if is_trace_name(p.rsplit("/", 1)[-1])]
            if not found:
                raise InputFileError(f"{shown(url)}: directory holds no trace ({', '.join(trace_suffixes())})")
        else:
            return [url]
    except InputFileError:
        raise
    except Exception as exc:  # noqa: BLE001 (a store's client raises its own kinds)
        raise refused(url, exc) from None
    if not found:
        raise InputFileError(f"{shown(url)}: no trace matches")
    if len(found) > MAX_FILES:
        raise InputFileError(f"{shown(url)}: names {len(found)} objects, more than the {MAX_FILES} taken")
    return [fs.unstrip_protocol(p) for p in sorted(found)]


def is_directory(url: str) -> bool:
    """Whether the URL names several traces (a directory or a glob): one job's ranks, as a local directory is."""
    fs, path = _filesystem(url)
    if _GLOB.search(path):
        return True
    try:
        return bool(fs.isdir(path))
    except Exception as exc:  # noqa: BLE001
        raise refused(url, exc) from None


class UrlPath(PurePosixPath):
    """A URL where the reader takes a path: ``str()`` is the URL itself (a path would fold its ``//``), ``name``
    its last part; nothing stats or opens it (the reader is handed the open stream)."""

    _url: str

    def __new__(cls, url: str) -> UrlPath:
        made = super().__new__(cls, url.split("://", 1)[-1])
        made._url = url
        return made

    def __str__(self) -> str:
        return self._url

    def __fspath__(self) -> str:  # os.stat of it fails (no such local file): it is never opened as one
        return self._url


def open_url(url: str) -> IO[bytes]:
    """The object as a buffered stream that reads BLOCK_BYTES ahead (never the whole object), or one line."""
    fs, path = _filesystem(url)
    try:
        raw = fs.open(path, "rb", block_size=BLOCK_BYTES, cache_type="readahead")
    except Exception as exc:  # noqa: BLE001
        raise refused(url, exc) from None
    return io.BufferedReader(raw, buffer_size=min(1 << 20, BLOCK_BYTES))


def read_url(
    url: str,
    read_json: Callable[[Path, IO[bytes]], TraceContents],
    read_other: Callable[[Path, TraceFormat, IO[bytes]], TraceContents],
) -> TraceContents:
    """One trace read from its URL as a local one is (``reader.read_trace`` hands it here, with its readers of
    each kind): its format from its first bytes, then that format's reader over the stream. The decoding stays in
    this process; an Nsight Systems database, which SQLite reads in place, is refused."""
    from wizard.trace.read.formats import KINETO_JSON, NSYS_SQLITE, detect_opened

    p = cast(Path, UrlPath(url))  # the readers take its str() and .name, and are handed the stream
    with _guarded(url), open_url(url) as fh:
        fmt = detect_opened(p, fh, True)
        if fmt is NSYS_SQLITE:
            raise InputFileError(f"{shown(url)}: an Nsight Systems database is read in place: copy it here first")
        contents = read_json(p, fh) if fmt is KINETO_JSON else read_other(p, fmt, fh)
        size = getattr(getattr(fh, "raw", None), "size", None)
        contents.stored_bytes = size if isinstance(size, int) else None  # trace-size's size of the file
        return contents


class _guarded(msgspec.Struct, eq=False):
    """A store's error while reading, as the one line ``refused`` says (a domain error passes as it is)."""

    url: str

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if exc is None or isinstance(exc, (InputFileError, MissingDependency)) or not isinstance(exc, Exception):
            return
        if isinstance(exc, OSError) or type(exc).__module__.split(".")[0] in {"botocore", "aiobotocore", "s3fs"}:
            raise refused(self.url, exc) from None


def iter_urls(names: list[str]) -> Iterator[str]:
    """Each URL of ``names`` expanded (``expand``); a local path passes through as it is."""
    for name in names:
        yield from (expand(name) if is_url(name) else [name])
