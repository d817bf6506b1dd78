"""The doctor's flow, for `gpucheck doctor` and `gpucheck.doctor()` alike: judge the request,
start the probes, load what the checks need while they run, then run the selected checks on
the snapshot and return the report."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from gpucheck.diagnosis.request import Caller, DoctorRequest, RequestError, validate
from gpucheck.inputs import UserError, load_compat, probe_options, read_snapshot
from gpucheck.model.snapshot import Snapshot
from gpucheck.report.core import Report

if TYPE_CHECKING:
    from concurrent.futures import Future

    from gpucheck.checks.registry import Check
    from gpucheck.compat import Compat
    from gpucheck.model.requirements import Requirements


def run(request: DoctorRequest) -> Report:
    """The report `request` asks for. Raises RequestError for bad input (a bad option value,
    an unreadable snapshot, bad compat data, no check matching --only/--skip)."""
    requirements = validate(request)
    probing = _start_probes(request) if request.probes_here else None
    # The seam where the probes and the imports overlap: the checks, the compat data and what
    # they use load here, while the probe children run.
    from gpucheck.checks.registry import SelectionError
    from gpucheck.compat import CompatError

    try:
        return _judge(request, requirements, probing)
    except RequestError:
        raise
    except (UserError, SelectionError) as exc:
        raise RequestError(str(exc)) from None
    except CompatError as exc:
        raise RequestError(f"compat data: {exc}") from None


def _judge(
    request: DoctorRequest, requirements: Requirements, probing: Future[Snapshot] | None
) -> Report:
    from gpucheck.checks.registry import held, select
    from gpucheck.checks.renamed import renamed_notices

    try:
        # A saved snapshot is read before the checks load (it is cheap), so that the framework
        # checks with nothing to judge in it are not imported; an unreadable one is reported
        # where it always was, after the options' errors.
        given: Snapshot | UserError | None = request.snapshot
        if request.from_file is not None and not request.only and not request.redact:
            try:
                given = read_snapshot(request.from_file)
            except UserError as exc:
                given = exc
        holds = None
        if isinstance(given, Snapshot) and not request.only and not request.redact:
            holds = held(given)
        # Only the check modules of the sections --only can match (all without it).
        selected = select(list(request.only), list(request.skip), holds)
        if request.caller is Caller.COMMAND_LINE:
            # A check id from before report schema 4.0 still selects its check; say its new name.
            for notice in renamed_notices([*request.only, *request.skip]):
                print(f"gpucheck: {notice}", file=sys.stderr)
        # While the probes run (this thread would only wait), what the checks would load on
        # first use: every compat topic and packaging's requirement parser, which would
        # otherwise load after the last probe.
        compat = load_compat(list(request.compat_dirs), every_topic=probing is not None)
        if probing is not None:
            from gpucheck.checks.frameworks.packages import load_parser

            load_parser()
    except BaseException:
        if probing is not None:
            _stop_probes(probing)
        raise
    if probing is not None:
        snapshot = probing.result()
    elif isinstance(given, UserError):
        raise given
    elif given is not None:
        snapshot = given
    else:
        assert request.from_file is not None
        snapshot = read_snapshot(request.from_file)
    return diagnose(
        snapshot,
        requirements,
        selected,
        compat,
        only=bool(request.only),
        strict=request.strict,
        from_file=request.from_file,
        redact=request.redact,
    )


def diagnose(
    snapshot: Snapshot,
    requirements: Requirements,
    selected: list[Check],
    compat: Compat,
    *,
    only: bool = False,
    strict: bool = False,
    from_file: str | None = None,
    redact: bool = False,
) -> Report:
    """The checks run on a snapshot, as a report: the one path from facts to verdicts. Raises
    CompatError for bad compat data."""
    from gpucheck.checks.context import Context
    from gpucheck.checks.registry import run as run_checks

    if redact:  # (redaction's imports, hashlib's OpenSSL among them, only when asked)
        from gpucheck.model.redact import redact_here

        # Judged after redaction, so that no finding quotes what was replaced.
        snapshot = redact_here(snapshot)
    findings = run_checks(Context(snapshot, requirements, compat), selected, only=only)
    return Report(
        snapshot,
        findings,
        strict=strict,
        from_file=from_file,
        requirements=requirements,
        unknown=_unprobed_python(snapshot),
    )


def _unprobed_python(snapshot: Snapshot) -> str | None:
    """Why the frameworks the user asked about were not judged: a --python whose probe did not
    run (not a Python interpreter, or one too broken to start). A gate that could not look
    where it was told answers "could not tell" (exit 5), never "ready"."""
    failed = [e for e in snapshot.environments if e.origin == "--python" and e.error]
    if not failed:
        return None
    env = failed[0]
    return (
        f"--python {env.python} could not be probed, so its frameworks were not judged (is it "
        f"a Python interpreter? {env.error})"
    )


def _start_probes(request: DoctorRequest) -> Future[Snapshot]:
    """Probing this machine, in a thread, from the first moment the request allows."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from gpucheck.probes.run import FIRST_WAVE_WAIT, collect

    try:  # a bad --python: a usage error before any probe starts
        options = probe_options(request.timeout, request.pythons, request.deep, request.host_id)
    except UserError as exc:
        raise RequestError(str(exc)) from None
    options.started = threading.Event()
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(collect, options)
    pool.shutdown(wait=False)
    # The checks import while the probe children run, not while their threads start them
    # (on two cores that doubled the time to the first child after this point). collect
    # always sets it; the bound guards against one stuck before its children (a hung /proc).
    options.started.wait(FIRST_WAVE_WAIT * 5)
    return future


def _stop_probes(probing: Future[Snapshot]) -> None:
    """A usage error found while probing: end the probe children, the answer is not needed."""
    from gpucheck.child.run import kill_all

    probing.cancel()
    kill_all()
