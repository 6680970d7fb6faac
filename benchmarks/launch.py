"""Fork-exec launcher that measures one command (run as a script, no imports
from the package): ``python -I -S launch.py REPORT CMD [ARG...]``.

It forks, execs CMD, reaps it with ``os.wait4`` and writes
``"<exit status> <seconds> <ru_maxrss KiB>"`` to REPORT. Forking from this
small interpreter (about 6 MB) rather than from a benchmark worker matters:
on Linux a child's ``ru_maxrss`` starts from the RSS high-water mark of the
process it was forked from.
"""

import os
import sys
import time


def main() -> None:
    report, argv = sys.argv[1], sys.argv[2:]
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            sys.stderr.write(f"cannot run {argv[0]}: {exc}\n")
        os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    seconds = time.perf_counter() - start
    with open(report, "w") as fh:
        fh.write(f"{os.waitstatus_to_exitcode(status)} {seconds:.6f} {usage.ru_maxrss}\n")


if __name__ == "__main__":
    main()
