"""vortex-data in a worker process started with another environment (issue 19: glibc
keeping freed memory), driven call by call from the harness.

glibc reads ``MALLOC_TRIM_THRESHOLD_`` / ``MALLOC_MMAP_THRESHOLD_`` once, when the process
starts, so a system measured with them must live in its own process. ``Worker`` starts
this file as a subprocess with the variables set (``MALLOC_ENV``), loads inputs into it
once (``load_decode``, ``load_filter``) and returns ``System`` s whose every call is one
request: the worker times the call itself (``perf_counter``, garbage collected before and
paused during, ``getrusage`` page faults of the worker around it, as the harness does in
its own process) and answers with a ``Measured``; the harness still schedules it
round-robin among the in-process systems, so machine noise hits all alike. For the check,
the worker sends the output back as Arrow IPC and the harness compares it with the
expected table like any other output.

The worker imports only pyarrow and vortex-data (no vortex_io): the messages are split
into DType and Array messages by the parent beforehand. Requests and answers are pickled
frames on the worker's stdin/stdout; its stderr is the parent's.
"""

from __future__ import annotations

import atexit
import os
import pickle
import struct
import subprocess
import sys
from typing import Any

#: the environment of the malloc-tuned worker: never trim the heap top (1 GiB threshold),
#: serve blocks up to 32 MiB (the largest value glibc accepts on 64-bit) from the heap
#: instead of fresh mmaps, so freed memory is kept and reused without page faults
MALLOC_ENV = {"MALLOC_TRIM_THRESHOLD_": str(1 << 30), "MALLOC_MMAP_THRESHOLD_": str(32 << 20)}


def _send(f: Any, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(struct.pack("<Q", len(data)))
    f.write(data)
    f.flush()


def _recv(f: Any) -> Any:
    head = f.read(8)
    if len(head) < 8:
        raise EOFError("the vortex-data worker closed its pipe")
    (n,) = struct.unpack("<Q", head)
    data = f.read(n)
    if len(data) < n:
        raise EOFError("the vortex-data worker closed its pipe mid-answer")
    return pickle.loads(data)


# -- the worker side ----------------------------------------------------------------------------


def _vx_expr(spec: tuple) -> Any:
    """A vortex-data expression from a small spec: ("eq"|"lt"|..., column, value) or
    ("in", column, [values])."""
    import vortex.expr as ve

    op, column, value = spec
    c = ve.column(column)
    if op == "in":
        return ve.in_list(c, list(value))
    return {"eq": c.__eq__, "ne": c.__ne__, "lt": c.__lt__, "le": c.__le__,
            "gt": c.__gt__, "ge": c.__ge__}[op](value)


def _serve() -> None:  # pragma: no cover - runs in the subprocess
    import gc
    import resource
    import time

    import pyarrow as pa
    import vortex as vx
    import vortex.serde as serde

    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write to the answer pipe
    jobs: dict[str, Any] = {}
    threads_set: Any = object()

    def decode(dmsg: bytes, amsgs: list[bytes]) -> pa.Table:
        return pa.Table.from_batches([pa.RecordBatch.from_struct_array(
            serde.decode_ipc_array_buffers([m], [dmsg]).to_arrow_array()) for m in amsgs])

    def lazy_filter(dmsg: bytes, amsgs: list[bytes], expr: Any) -> pa.Table:
        parts = []
        for m in amsgs:
            a = serde.decode_ipc_array_buffers([m], [dmsg])
            parts.append(a.filter(a.apply(expr)).to_arrow_table())
        return pa.concat_tables(parts)

    while True:
        try:
            req = _recv(inp)
        except EOFError:
            return
        try:
            kind = req[0]
            if kind == "quit":
                _send(out, ("ok", None))
                return
            if kind == "info":
                _send(out, ("ok", {"pid": os.getpid(), "vortex_data": vx.__version__,
                                   "pyarrow": pa.__version__,
                                   "env": {k: os.environ.get(k) for k in MALLOC_ENV},
                                   "default_worker_threads": vx.worker_threads()}))
            elif kind == "load_decode":
                _, key, dmsg, amsgs = req
                jobs[key] = lambda d=dmsg, a=amsgs: decode(d, a)
                _send(out, ("ok", None))
            elif kind == "load_filter":
                _, key, dmsg, amsgs, spec = req
                expr = _vx_expr(spec)
                jobs[key] = lambda d=dmsg, a=amsgs, e=expr: lazy_filter(d, a, e)
                _send(out, ("ok", None))
            elif kind == "drop":
                jobs.pop(req[1], None)
                _send(out, ("ok", None))
            elif kind == "run":
                _, key, threads, want_table = req
                if threads != threads_set:
                    vx.set_worker_threads(threads)
                    threads_set = threads
                fn = jobs[key]
                gc.collect()
                gc.disable()
                try:
                    r0 = resource.getrusage(resource.RUSAGE_SELF)
                    t0 = time.perf_counter()
                    res = fn()
                    t1 = time.perf_counter()
                    r1 = resource.getrusage(resource.RUSAGE_SELF)
                finally:
                    gc.enable()
                table = None
                if want_table:
                    sink = pa.BufferOutputStream()
                    with pa.ipc.new_stream(sink, res.schema) as w:
                        w.write_table(res)
                    table = sink.getvalue().to_pybytes()
                del res
                cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
                _send(out, ("ok", (t1 - t0, r1.ru_minflt - r0.ru_minflt,
                                   r1.ru_majflt - r0.ru_majflt, cpu, table)))
            else:
                _send(out, ("error", f"unknown request {kind!r}"))
        except Exception as e:  # answer with the error; the parent raises it
            _send(out, ("error", f"{type(e).__name__}: {e}"))


# -- the parent side ----------------------------------------------------------------------------


class WorkerError(RuntimeError):
    """The worker answered a request with an error (or died)."""


class Worker:
    """A vortex-data worker process with ``env`` added to this process's environment."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.env = dict(MALLOC_ENV if env is None else env)
        self._proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--serve"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**os.environ, **self.env})
        self._keys = 0
        atexit.register(self.close)
        self.info = self.call("info")

    def call(self, *req: Any) -> Any:
        if self._proc.poll() is not None:
            raise WorkerError(f"the vortex-data worker exited with {self._proc.returncode}")
        _send(self._proc.stdin, req)
        try:
            status, value = _recv(self._proc.stdout)
        except EOFError as e:
            raise WorkerError(str(e)) from None
        if status != "ok":
            raise WorkerError(f"vortex-data worker: {value}")
        return value

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                self.call("quit")
            except (WorkerError, OSError):
                pass
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def _key(self) -> str:
        self._keys += 1
        return f"job{self._keys}"

    def load_decode(self, dtype_msg: Any, array_msgs: list[Any]) -> str:
        """Send a stream's messages; returns the key of its decode job."""
        key = self._key()
        self.call("load_decode", key, bytes(dtype_msg), [bytes(m) for m in array_msgs])
        return key

    def load_filter(self, dtype_msg: Any, array_msgs: list[Any], spec: tuple) -> str:
        """Send a stream's messages and a filter spec (``_vx_expr``); returns the job key."""
        key = self._key()
        self.call("load_filter", key, bytes(dtype_msg), [bytes(m) for m in array_msgs], spec)
        return key

    def system(self, name: str, key: str, *, threads: int | None, threads_label: str,
               note: str = "") -> Any:
        """A harness ``System`` running job ``key`` in the worker (``threads``: vortex-data
        worker threads, None its default)."""
        import pyarrow as pa

        from bench.harness import Measured, System

        def run() -> Measured:
            dt, minflt, majflt, cpu, _ = self.call("run", key, threads, False)
            return Measured(dt, minflt, majflt, cpu)

        def check_run() -> pa.Table:
            _, _, _, _, data = self.call("run", key, threads, True)
            return pa.ipc.open_stream(data).read_all()

        env = " ".join(f"{k}={v}" for k, v in self.env.items())
        return System(name, run, check_run=check_run, threads=threads_label,
                      note=(note + "; " if note else "") + f"in a worker process started with {env}"
                           " (time and page faults measured inside it)")


_SHARED: Worker | None = None


def shared_worker() -> Worker:
    """The run's malloc-tuned worker (started on first use, closed at exit)."""
    global _SHARED
    if _SHARED is None or _SHARED._proc.poll() is not None:
        _SHARED = Worker()
    return _SHARED


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        _serve()
    else:
        sys.exit("bench/vx_worker.py is started by the bench harness (--serve)")
