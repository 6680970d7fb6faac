"""Requests that arrive together, aligned together (issue 45, capability 3).

A server worker that finds several requests queued runs them as one batch:
each request runs in its own thread through its front door, as
`server.run_request` runs it alone, but one thread at a time (a baton), so
that the process-wide state a request sets (folder, standard streams,
arguments, environment, umask) is its own while it runs. When a request
reaches `Aligner.align_many` it parks there (the aligner's ``batch`` hook:
`Gathering.hook`), its state put aside; once every
request has parked or ended, the parked ones that share their settings and
backend are aligned in one `align_many` call (the batch mode that exists:
each family's alignment does not depend on its batch), and each request
resumes with its own families' results to write its own outputs. Each
request's progress lines go to its own standard error. A batch that fails
is run again request by request, so that a bad input fails its own call
alone.
"""

from __future__ import annotations

import contextlib
import threading
import warnings

from msa_gpu.aligner import Aligner
from msa_gpu.backend import set_threads
from msa_gpu.serving.protocol import encode
from msa_gpu.serving.state import process_state, restore_state


class _Job:
    """One parked `align_many` call and, once made, its results (or error)
    and the warnings its alignment raised (said again in its own thread)."""

    def __init__(self, aligner: Aligner, families: list, recipes):
        self.aligner, self.families, self.recipes = aligner, families, recipes
        self.results, self.error, self.warned = None, None, []


class Fanout:
    """A progress reporter that reports to each parked request's reporter."""

    def __init__(self, reporters: list):
        self.reporters = reporters

    @contextlib.contextmanager
    def stage(self, name: str):
        with contextlib.ExitStack() as stack:
            for r in self.reporters:
                stack.enter_context(r.stage(name))
            yield

    def note(self, text: str) -> None:
        for r in self.reporters:
            r.note(text)

    def progress(self, *args, **kwargs) -> None:
        for r in self.reporters:
            r.progress(*args, **kwargs)


class Gathering:
    """The baton and the parked calls of one batch of requests (see the module)."""

    def __init__(self, run_request):
        import numba

        self.run_request = run_request
        self.cond = threading.Condition()
        self.turn: int | None = None  # the request whose thread may run
        self.parked: dict[int, _Job] = {}
        self.done: set[int] = set()
        self.answers: dict[int, dict] = {}
        self.home = process_state()  # the server's own state, between requests
        self.threads = numba.get_num_threads()  # this worker's share of the cores (numba's count is per thread)

    def _wait_turn(self, i: int) -> None:
        with self.cond:
            self.cond.wait_for(lambda: self.turn == i)

    def _yield(self) -> None:
        with self.cond:
            self.turn = None
            self.cond.notify_all()

    def _thread(self, i: int, request: dict) -> None:
        self._wait_turn(i)
        try:
            set_threads(self.threads)
            # (its aligners park their work here: the hook rides on the request's caller to the runner)
            self.answers[i] = self.run_request(request, self.hook(i))  # (which answers for its own failures)
        except Exception as exc:  # noqa: BLE001 - a request that cannot even start fails alone
            self.answers[i] = {"rc": 1, "stdout": "", "stderr": encode(f"msagpu: server error: {exc}\n".encode())}
        finally:
            self.done.add(i)
            self._yield()

    def hook(self, i: int):
        """Request ``i``'s batch hook (`msa_gpu.aligner.BatchHook`): its
        `align_many` calls parked here (`park`)."""
        return lambda aligner, families, recipes: self.park(i, aligner, families, recipes)

    def park(self, i: int, aligner: Aligner, families: list, recipes) -> list:
        """Request ``i``'s `align_many`: parked until the batch is aligned."""
        job = _Job(aligner, families, recipes)
        mine = process_state()
        restore_state(self.home)
        self.parked[i] = job
        self._yield()
        self._wait_turn(i)
        restore_state(mine)
        for w in job.warned:  # said here, on this request's own stderr, as alone
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if job.error is not None:
            raise job.error
        return job.results

    def run(self, requests: list[dict]) -> list[dict]:
        """Every request's answer, in order."""
        threads = [threading.Thread(target=self._thread, args=(i, r), daemon=True) for i, r in enumerate(requests)]
        for t in threads:
            t.start()
        while len(self.done) < len(requests):
            ready = [i for i in range(len(requests)) if i not in self.done and i not in self.parked]
            try:
                turns = ready or self._align_parked()
            except BaseException as exc:  # noqa: BLE001 - every parked request is let go with it
                turns = self._release(exc)
            for i in turns:  # each in turn, until it parks or ends
                with self.cond:
                    self.turn = i
                    self.cond.notify_all()
                    self.cond.wait_for(lambda: self.turn is None)
        for t in threads:
            t.join()
        return [self.answers[i] for i in range(len(requests))]

    def _release(self, exc: BaseException) -> list[int]:
        """The parked requests, each failing with ``exc`` where it has no outcome."""
        jobs = dict(sorted(self.parked.items()))
        self.parked = {}
        for job in jobs.values():
            if job.results is None and job.error is None:
                job.error = exc if isinstance(exc, Exception) else RuntimeError(f"interrupted: {exc!r}")
        return list(jobs)

    def _align_parked(self) -> list[int]:
        """Align the parked calls, grouped by settings and backend; their
        requests, to resume in order."""
        import numba

        jobs = dict(sorted(self.parked.items()))
        groups: dict = {}
        for i, job in jobs.items():  # the backend each would take alone (align_many's own choice)
            try:
                with warnings.catch_warnings(record=True) as said:
                    warnings.simplefilter("always")
                    if job.recipes is None:
                        job.recipes = job.aligner.plan(job.families)
                    backend = job.aligner.choose_backend(job.recipes)
                job.warned += said
            except Exception as exc:  # noqa: BLE001 - this request's own failure
                job.error = exc
                continue
            groups.setdefault((job.aligner.config, backend.name), []).append(i)
        threads = numba.get_num_threads()  # (an aligner sets this thread's count from its settings)
        try:
            for members in groups.values():
                self._align_group([jobs[i] for i in members], threads)
        finally:
            numba.set_num_threads(threads)
        self.parked = {}
        return list(jobs)

    @staticmethod
    def _align_group(batch: list[_Job], threads: int) -> None:
        """One group's families in one `align_many` call; where that fails
        (or the group is one call), each call alone, with its own outcome
        and its own ``--threads`` (else the worker's ``threads``)."""
        import numba

        if len(batch) > 1:
            first = batch[0].aligner
            reporters = [j.aligner.reporter for j in batch if j.aligner.reporter is not None]
            try:
                with warnings.catch_warnings(record=True) as said:
                    warnings.simplefilter("always")
                    together = Aligner(first.config, backend=first.backend,
                                       reporter=Fanout(reporters) if reporters else None)
                    results = together.align_many([f for j in batch for f in j.families],
                                                  recipes=[r for j in batch for r in j.recipes])
                start = 0
                for j in batch:
                    j.results, start = results[start: start + len(j.families)], start + len(j.families)
                    j.warned += said
                return
            except Exception:  # noqa: BLE001 - one by one, so that each call gets its own outcome
                pass
        for j in batch:
            try:
                with warnings.catch_warnings(record=True) as said:
                    warnings.simplefilter("always")
                    numba.set_num_threads(threads)
                    set_threads(j.aligner.config.threads)
                    j.aligner.batch = None  # (aligned here: not parked again)
                    j.results = j.aligner.align_many(j.families, recipes=j.recipes)
                j.warned += said
            except Exception as exc:  # noqa: BLE001 - raised again in the request's own thread
                j.error = exc


def run_together(requests: list[dict], run_request) -> list[dict]:
    """The answers of ``requests`` (see the module); one request runs as it
    would alone."""
    if len(requests) == 1:
        return [run_request(requests[0])]
    return Gathering(run_request).run(requests)
