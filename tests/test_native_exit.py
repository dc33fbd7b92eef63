"""The process around the native core: interpreter exit while daemon threads are inside
native scans, decodes and writes ends normally (exit status 0, nothing on stderr), and
Ctrl-C during a long native call raises KeyboardInterrupt promptly, leaving the process
usable. Each case runs in a subprocess (bounded by a timeout)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import pytest

import vortex_io._native_glue as ng

# daemon threads looping over one kind of work, the main thread leaving while they run
EXIT_SCRIPT = textwrap.dedent("""
    import io, sys, threading, time
    import vortex_io as vio
    from vortex_io import datasets

    table = datasets.trades(60_000)
    buf = io.BytesIO()
    vio.write_ipc(buf, table, chunk_rows=8192)
    data = buf.getvalue()
    started = threading.Semaphore(0)

    def scan():
        vio.scan(data).to_arrow()

    def read_table():
        vio.read_table(data)

    def reader():
        with vio.StreamReader(data) as r:
            for _ in r:
                pass

    def write_ipc():
        vio.write_ipc(io.BytesIO(), table, chunk_rows=8192)

    def writer():
        with vio.StreamWriter(io.BytesIO(), table.schema, compress=True) as w:
            w.write(table)

    WORK = {"scan": scan, "read_table": read_table, "reader": reader,
            "write_ipc": write_ipc, "writer": writer}

    def loop(fn):
        fn()
        started.release()
        while True:
            fn()

    kinds = list(WORK) if sys.argv[1] == "all" else [sys.argv[1]]
    threads = [threading.Thread(target=loop, args=(WORK[k],), daemon=True)
               for k in kinds for _ in range(2)]
    for t in threads:
        t.start()
    for _ in threads:  # every thread through its work once: the next rounds run at exit
        started.acquire()
    time.sleep(0.2)
""")


@pytest.mark.parametrize("kind, run", [
    *[(k, r) for k in ("scan", "read_table", "reader", "write_ipc", "writer") for r in range(2)],
    *[("all", r) for r in range(4)],
])
def test_exit_with_daemon_threads_in_native_work_is_clean(kind, run):
    p = subprocess.run([sys.executable, "-c", EXIT_SCRIPT, kind], capture_output=True,
                       text=True, timeout=120)
    assert (p.returncode, p.stderr) == (0, ""), f"{kind} run {run}: exit {p.returncode}\n{p.stderr}"


# the main thread in a long native call (or a loop of native reads) when SIGINT comes
SIGINT_SCRIPT = textwrap.dedent("""
    import io, sys, time
    import vortex_io as vio, vortex_io._native_glue as ng
    from vortex_io import datasets

    table = datasets.trades(200_000)
    buf = io.BytesIO()
    vio.write_ipc(buf, table, chunk_rows=16384)
    data = buf.getvalue()
    native = ng.native()
    print("ready", flush=True)
    try:
        if sys.argv[1] == "pool":  # one native call of 400 x 25 ms tasks: 5 s on two threads
            native.pool_busy(400, 25, 2)
        else:
            while True:
                vio.read_table(data)
                vio.scan(data, threads=1).to_arrow()
        print("not interrupted", flush=True)
    except KeyboardInterrupt:
        print("interrupted", time.monotonic(), flush=True)
    # still usable: the pool runs every task again, the reads return everything
    if native is not None:
        assert native.pool_busy(8, 1, 2) == 8
    assert vio.read_table(data).num_rows == table.num_rows
    print("usable", flush=True)
""")


@pytest.mark.parametrize("kind", ["pool", "reads"])
def test_ctrl_c_during_native_work_interrupts_promptly(kind):
    if kind == "pool" and not ng.enabled():
        pytest.skip("the native core is off: no native call to interrupt")
    p = subprocess.Popen([sys.executable, "-c", SIGINT_SCRIPT, kind], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.5)  # inside the native call (or the loop of reads) by now
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
        p.wait()
    lines = out.split()
    assert p.returncode == 0 and err == "", f"exit {p.returncode}\n{out}\n{err}"
    assert lines[0] == "interrupted" and lines[-1] == "usable", out
    # time.monotonic() is the system's monotonic clock: comparable across the processes
    waited = float(lines[1]) - sent
    assert 0 <= waited < 1.0, f"KeyboardInterrupt {waited:.3f} s after SIGINT"
