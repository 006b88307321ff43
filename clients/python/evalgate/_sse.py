"""Server-sent events (text/event-stream) parsed from the lines of a response."""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, Dict, Iterable, Iterator, List, Optional


class _Parser:
    def __init__(self) -> None:
        self.event = ""
        self.data: List[str] = []

    def line(self, text: str) -> Optional[Dict[str, Any]]:
        if text == "":
            done = None
            if self.data:
                raw = "\n".join(self.data)
                try:
                    data: Any = json.loads(raw)
                except ValueError:
                    data = raw
                done = {"event": self.event or "message", "data": data}
            self.event, self.data = "", []
            return done
        if text.startswith(":"):
            return None
        field, _, value = text.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            self.event = value
        elif field == "data":
            self.data.append(value)
        return None


def parse_events(lines: Iterable[str]) -> Iterator[Dict[str, Any]]:
    """``{"event", "data"}`` per event, ``data`` parsed as JSON when it is JSON. A final event without
    its blank line is dropped, as the specification says."""
    parser = _Parser()
    for text in lines:
        out = parser.line(text.rstrip("\r\n"))
        if out is not None:
            yield out


async def aparse_events(lines: AsyncIterator[str]) -> AsyncIterator[Dict[str, Any]]:
    parser = _Parser()
    async for text in lines:
        out = parser.line(text.rstrip("\r\n"))
        if out is not None:
            yield out
