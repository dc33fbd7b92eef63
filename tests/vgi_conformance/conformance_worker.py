"""The vgi-rpc conformance server over this process's stdin/stdout, its transport wrapped as
the mode says (the server end of the harness's ``subprocess`` kind).

    python conformance_worker.py MODE [--path DIR ...] [--fake-storage URL [--externalize-threshold N]]

MODE is one of ``plain``, ``vortex``, ``vortex-compressed``. ``--path`` puts directories in
front of ``sys.path`` (the test process passes the one its ``vortex_io`` came from, so both
ends run the same code). With ``--fake-storage`` every response batch larger than the
threshold (1 byte by default) is uploaded there and replaced on the wire by a pointer batch.
Nothing but the RPC stream may go to stdout; diagnostics go to stderr.
"""

from __future__ import annotations

import argparse
import sys


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode")
    parser.add_argument("--path", action="append", default=[])
    parser.add_argument("--fake-storage", default=None)
    parser.add_argument("--externalize-threshold", type=int, default=1)
    args = parser.parse_args()
    sys.path[:0] = args.path

    import _harness  # beside this file (sys.path[0] is this file's directory)

    if args.mode not in _harness.MODES:
        parser.error(f"mode must be one of {', '.join(_harness.MODES)}")
    external = None
    if args.fake_storage is not None:
        external = _harness.server_external_location(args.fake_storage, args.externalize_threshold)
    server = _harness.conformance_server(external_location=external)
    transport = _harness.wrap(_harness.stdio_transport(), args.mode)
    try:
        server.serve(transport)
    finally:
        transport.close()


if __name__ == "__main__":
    main()
