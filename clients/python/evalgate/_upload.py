"""Streamed JSON-lines request bodies (dataset uploads, task log imports), never held whole in memory."""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Iterable, Iterator, List, Mapping, NamedTuple, Optional, Union

BATCH_BYTES = 64 * 1024
FILE_CHUNK = 256 * 1024
#: DataFrame rows converted at a time: small enough that a chunk's JSON stays well under a few MB.
FRAME_ROWS = 2000


class UploadProgress(NamedTuple):
    """Progress of an upload, counted before any compression: bytes sent and non-blank lines among them."""

    bytes: int
    rows: int


ProgressCallback = Callable[[UploadProgress], None]
#: A file path, a pandas DataFrame, or rows (dicts, one JSON line each) and/or bytes/str of JSON lines.
UploadSource = Union[str, "os.PathLike[str]", Iterable[Union[Mapping[str, Any], bytes, str]], Any]


def _is_frame(source: Any) -> bool:
    return type(source).__name__ == "DataFrame" and hasattr(source, "to_json") and hasattr(source, "iloc")


def _frame_chunks(frame: Any) -> Iterator[bytes]:
    for start in range(0, len(frame), FRAME_ROWS):
        text = frame.iloc[start : start + FRAME_ROWS].to_json(orient="records", lines=True, date_format="iso")
        if text and not text.endswith("\n"):
            text += "\n"
        yield text.encode("utf-8")


def _row_chunks(rows: Iterable[Any]) -> Iterator[bytes]:
    # Rows are gathered into chunks of about 64 KiB, so that a million small rows are not a million writes.
    lines: List[str] = []
    size = 0
    for item in rows:
        if isinstance(item, (bytes, bytearray, memoryview, str)):
            if lines:
                yield "".join(lines).encode("utf-8")
                lines, size = [], 0
            yield item.encode("utf-8") if isinstance(item, str) else bytes(item)
            continue
        line = json.dumps(item, separators=(",", ":"), ensure_ascii=False, default=str) + "\n"
        lines.append(line)
        size += len(line)
        if size >= BATCH_BYTES:
            yield "".join(lines).encode("utf-8")
            lines, size = [], 0
    if lines:
        yield "".join(lines).encode("utf-8")


def _file_chunks(path: str) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while True:
            chunk = f.read(FILE_CHUNK)
            if not chunk:
                return
            yield chunk


class _LineCounter:
    """Counts non-blank lines across chunks."""

    def __init__(self) -> None:
        self.rows = 0
        self.bytes = 0
        self._open = False

    def add(self, chunk: bytes) -> None:
        self.bytes += len(chunk)
        if not chunk:
            return
        # Lines ended in this chunk, less those that were blank.
        lines = chunk.split(b"\n")
        for i, part in enumerate(lines):
            if part.strip():
                self._open = True
            if i < len(lines) - 1:
                if self._open:
                    self.rows += 1
                self._open = False

    def end(self) -> None:
        if self._open:
            self.rows += 1
        self._open = False


@dataclass
class Upload:
    """A streamed request body. ``open()`` is called once per attempt."""

    content_type: str
    headers: Mapping[str, str]
    #: Whether it can be sent again for a retry (a file, a list or a DataFrame can; an iterator cannot).
    replayable: bool
    open: Callable[[], Iterator[bytes]]
    open_async: Optional[Callable[[], AsyncIterator[bytes]]] = None


def _counted(chunks: Iterator[bytes], on_progress: Optional[ProgressCallback], gzip: bool) -> Iterator[bytes]:
    counter = _LineCounter()
    packer = zlib.compressobj(6, zlib.DEFLATED, 31) if gzip else None
    for chunk in chunks:
        counter.add(chunk)
        if on_progress:
            on_progress(UploadProgress(counter.bytes, counter.rows))
        out = packer.compress(chunk) if packer else chunk
        if out:
            yield out
    counter.end()
    if on_progress:
        on_progress(UploadProgress(counter.bytes, counter.rows))
    if packer:
        yield packer.flush()


async def _counted_async(
    chunks: AsyncIterator[Any], on_progress: Optional[ProgressCallback], gzip: bool
) -> AsyncIterator[bytes]:
    counter = _LineCounter()
    packer = zlib.compressobj(6, zlib.DEFLATED, 31) if gzip else None
    async for item in chunks:
        for chunk in _row_chunks([item]):
            counter.add(chunk)
            if on_progress:
                on_progress(UploadProgress(counter.bytes, counter.rows))
            out = packer.compress(chunk) if packer else chunk
            if out:
                yield out
    counter.end()
    if on_progress:
        on_progress(UploadProgress(counter.bytes, counter.rows))
    if packer:
        yield packer.flush()


def json_lines_upload(
    source: UploadSource, *, on_progress: Optional[ProgressCallback] = None, gzip: bool = False
) -> Upload:
    """The ``application/x-ndjson`` body of an upload from a path, a DataFrame, a list or an iterable."""
    headers = {"content-encoding": "gzip"} if gzip else {}
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"No such file to upload: {path}")
        return Upload("application/x-ndjson", headers, True, lambda: _counted(_file_chunks(path), on_progress, gzip))
    if _is_frame(source):
        return Upload("application/x-ndjson", headers, True, lambda: _counted(_frame_chunks(source), on_progress, gzip))
    if hasattr(source, "__aiter__"):
        return Upload(
            "application/x-ndjson",
            headers,
            False,
            _no_sync,
            open_async=lambda: _counted_async(source.__aiter__(), on_progress, gzip),
        )
    if isinstance(source, (list, tuple)):
        return Upload("application/x-ndjson", headers, True, lambda: _counted(_row_chunks(source), on_progress, gzip))
    iterator = iter(source)
    return Upload("application/x-ndjson", headers, False, lambda: _counted(_row_chunks(iterator), on_progress, gzip))


def _no_sync() -> Iterator[bytes]:
    raise TypeError("An async iterable can be uploaded only with AsyncEvalgate")
