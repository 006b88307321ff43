"""Evalgate code evaluator worker (standard library only).

Protocol, JSON lines. The first stdin line is a header:
  {"source": str, "limits": {"as": bytes, "cpu": s, "nproc": n, "fsize": bytes, "nofile": n},
   "uid": int|null, "gid": int|null, "progress_fd": int|null, "log_limit": chars, "sandboxed": bool}
The runner applies the limits, drops to `uid` when given (root only), loads the source once and answers
{"ready": true} or {"ready": false, "error": str}. Then each request line is [batch_id, [[sample,
ground_truth, baseline], ...]] and each reply line is [batch_id, results, latencies_us, cpu_seconds],
where a result is a number (score), a bool (passed, score 1/0) or
[score, passed, reason, [error_code, message] | null, logs | null]. Fewer results than positions
means the worker has used most of its CPU-seconds budget: the host sends the rest to a new worker.

Before each sample the runner stores (batch_id, index + 1) in the shared progress page so that the
host knows which sample is running when it has to kill the worker.
"""
import io
import json
import linecache
import math
import numbers
import os
import resource
import struct
import sys
import time
import traceback
import types

_RUNNER = __file__
_OK_TYPES = (float, int, bool, dict)


class Capture(io.TextIOBase):
    """Replaces sys.stdout/sys.stderr: keeps what user code prints, up to a limit, per sample."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, limit):
        self.limit = limit
        self.parts = []
        self.n = 0

    def writable(self):
        return True

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        if self.n < self.limit:
            self.parts.append(s)
        self.n += len(s)
        return len(s)

    def take(self):
        text = "".join(self.parts)
        total = self.n
        self.parts = []
        self.n = 0
        if total > self.limit:
            return text[: self.limit] + f"\n... [{total - self.limit} more characters dropped]"
        return text


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def apply_limits(limits):
    names = {
        "as": resource.RLIMIT_AS,
        "cpu": resource.RLIMIT_CPU,
        "nproc": resource.RLIMIT_NPROC,
        "fsize": resource.RLIMIT_FSIZE,
        "nofile": resource.RLIMIT_NOFILE,
    }
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for key, value in (limits or {}).items():
        if value is None:
            continue
        which = names[key]
        _, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))


def drop_privileges(uid, gid):
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    with open("/proc/self/status") as f:
        status = dict(line.split(":", 1) for line in f if ":" in line)
    for cap in ("CapPrm", "CapEff", "CapAmb"):
        if int(status.get(cap, "0").strip() or "0", 16) != 0:
            raise SystemExit(f"runner: {cap} not empty after dropping privileges")
    if os.getuid() == 0 or os.geteuid() == 0:
        raise SystemExit("runner: still root after dropping privileges")


def error_tail(exc, max_lines=12, max_chars=2000):
    try:
        return _error_tail(exc, max_lines, max_chars)
    except BaseException:  # noqa: BLE001 - a hostile exception must not take the worker down
        return f"{type(exc).__name__} (its message could not be formatted)"


def _error_tail(exc, max_lines, max_chars):
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == _RUNNER:
        tb = tb.tb_next
    lines = "".join(traceback.format_exception(type(exc), exc, tb)).rstrip().splitlines()
    text = "\n".join(lines[-max_lines:])
    return text[-max_chars:]


def describe(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def invalid(message):
    return [None, None, None, ["invalid_return", message], None]


def finite(value, what):
    try:
        number = float(value)
    except (OverflowError, TypeError, ValueError):
        return None, f"{what} must be a finite number, got {describe(value)}"
    if math.isfinite(number):
        return number, None
    return None, f"{what} must be a finite number, got {describe(value)}"


def convert(result):
    """Turns what evaluate returned into the wire form, or an invalid_return error."""
    kind = type(result)
    if kind is bool:
        return result
    if kind is float or kind is int:
        number, problem = finite(result, "evaluate's return value")
        return invalid(problem) if problem else number
    if isinstance(result, dict):
        if "score" not in result:
            return invalid(f"evaluate returned a dict without 'score': {describe(result)}")
        score = result["score"]
        passed = result.get("passed")
        reason = result.get("reason")
        if type(score).__name__ in ("bool", "bool_"):
            passed = bool(score) if passed is None else passed
            score = 1.0 if score else 0.0
        elif not isinstance(score, numbers.Real):
            return invalid(f"'score' must be a number, got {describe(score)}")
        score, problem = finite(score, "'score'")
        if problem:
            return invalid(problem)
        if passed is not None and type(passed).__name__ not in ("bool", "bool_"):
            return invalid(f"'passed' must be a bool or None, got {describe(passed)}")
        if reason is not None and not isinstance(reason, str):
            return invalid(f"'reason' must be a string or None, got {describe(reason)}")
        return [score, None if passed is None else bool(passed), reason[:4000] if reason else reason, None, None]
    if type(result).__name__ == "bool_":
        return bool(result)
    if isinstance(result, numbers.Real):
        number, problem = finite(result, "evaluate's return value")
        return invalid(problem) if problem else number
    what = "None (is a return statement missing?)" if result is None else f"{type(result).__name__} ({describe(result)})"
    return invalid(
        f"evaluate returned {what}; "
        "expected a number, a bool, or a dict like {\"score\": 1.0, \"passed\": true, \"reason\": \"...\"}"
    )


def lacking(ground_truth, detail=None):
    """A position the evaluator could not score for want of ground truth counts as missing, not as an error."""
    if ground_truth is not None:
        return None
    how = f"evaluate raised on None:\n{detail}" if detail else "evaluate returned None"
    return [None, None, None, ["missing_data", f"{how} (this position has no ground_truth)"], None]


def load(source):
    linecache.cache["<evaluator>"] = (len(source), None, source.splitlines(True), "<evaluator>")
    module = types.ModuleType("evaluator")
    module.__file__ = "<evaluator>"
    sys.modules["evaluator"] = module
    exec(compile(source, "<evaluator>", "exec"), module.__dict__)
    evaluate = getattr(module, "evaluate", None)
    if not callable(evaluate):
        raise TypeError("source must define a function evaluate(sample, ground_truth, baseline)")
    return evaluate


class Loop:
    """A single event loop kept for the worker's lifetime, created on first use."""

    loop = None

    def run(self, awaitable):
        if self.loop is None:
            import asyncio

            self.loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self.loop)
        return self.loop.run_until_complete(awaitable)


def main():
    header = json.loads(sys.stdin.buffer.readline())
    # Protocol lines use private copies of fd 0 and 1; fd 1 now points at fd 2 and fd 0 at /dev/null
    # so that nothing user code does at the C level can read requests or corrupt replies.
    proto_in = os.dup(0)
    proto_out = os.dup(1)
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    requests = os.fdopen(proto_in, "rb", buffering=1 << 20)
    sys.stdin = io.StringIO("")

    progress = None
    if header.get("progress_fd") is not None:
        import mmap

        progress = mmap.mmap(header["progress_fd"], 16)
        os.close(header["progress_fd"])
    apply_limits(header.get("limits"))
    if header.get("uid") is not None:
        drop_privileges(header["uid"], header["gid"])
    sandboxed = bool(header.get("sandboxed"))
    cpu_limit = (header.get("limits") or {}).get("cpu")
    cpu_budget = cpu_limit * 0.8 if cpu_limit else float("inf")
    capture = Capture(int(header.get("log_limit") or 4096))
    sys.stdout = sys.stderr = capture
    main_pid = os.getpid()

    try:
        evaluate = load(header["source"])
    except BaseException as exc:  # noqa: BLE001 - anything the source raises is the user's error
        if os.getpid() != main_pid:
            os._exit(0)
        reply = {"ready": False, "error": error_tail(exc), "logs": capture.take() or None}
        write_all(proto_out, (json.dumps(reply) + "\n").encode("utf-8", "replace"))
        return
    del header
    import inspect

    is_async = inspect.iscoroutinefunction(evaluate)
    isawaitable = inspect.isawaitable
    loop = Loop()
    pack = struct.Struct("<II").pack_into
    clock = time.perf_counter
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
    write_all(proto_out, (json.dumps({"ready": True, "logs": capture.take() or None}) + "\n").encode())

    cpu_checked = clock()
    for line in requests:
        batch_id, items = json.loads(line)
        results = []
        latencies = []
        for index, (sample, ground_truth, baseline) in enumerate(items):
            started = clock()
            if started - cpu_checked > 0.05:
                cpu_checked = started
                if index and time.process_time() > cpu_budget:
                    break  # stop before RLIMIT_CPU kills the worker mid-sample
            if progress is not None:
                pack(progress, 0, batch_id, index + 1)
            try:
                value = evaluate(sample, ground_truth, baseline)
                if is_async or (type(value) not in _OK_TYPES and isawaitable(value)):
                    value = loop.run(value)
                result = lacking(ground_truth) if value is None else None
                if result is None:
                    result = convert(value)
            except BaseException as exc:  # noqa: BLE001
                if os.getpid() != main_pid:
                    os._exit(0)
                result = None
                if isinstance(exc, (AttributeError, TypeError, KeyError)) and "NoneType" in str(exc):
                    result = lacking(ground_truth, error_tail(exc))
                if result is None:
                    result = [None, None, None, ["evaluator_exception", error_tail(exc)], None]
            if os.getpid() != main_pid:
                os._exit(0)  # a child forked by user code must never speak the protocol
            latencies.append(int((clock() - started) * 1e6))
            if capture.n:
                if type(result) is not list:
                    result = [float(result), result if type(result) is bool else None, None, None, None]
                result[4] = capture.take()
            results.append(result)
        if sandboxed:
            try:
                os.kill(-1, 9)  # stray processes user code left behind in this sandbox
            except OSError:
                pass
        cpu = round(time.process_time(), 3)
        write_all(proto_out, (dumps([batch_id, results, latencies, cpu]) + "\n").encode("utf-8", "replace"))


if __name__ == "__main__":
    main()
