"""The rows of a run (one reproducer on one kernel each) and the guests
that decide them: which row gets the next guest slot, and what a row
concludes from its guests (stats.Row, the sequential rule)."""
import os
import sys
import threading
import time

from . import detectors, guest, rates
from .results import render
from . import stats
from .log import log
from .kernels import unpatched_build
from .untrusted import clean



def row_role(expect, kernel):
    """A row's role: with --expect, krepro's flavours are the bug and the fix;
    any other kernel (and every kernel without --expect) is a probe."""
    if expect and kernel.flavour == "unpatched":
        return "bug"
    if expect and kernel.flavour == "patched":
        return "fixed"
    return "probe"


def rate_record(repro, kernel, role, sight, accel, given=None):
    """(record or None, what the records said) a row of role on kernel is
    weighed with: a bug or fixed row's is its branch's unpatched build's; a
    probe row's is `given` (--rate: measured elsewhere, e.g. on a
    bisection's BAD), else one measured where the row runs (probe_record)."""
    if role == "probe" and given:
        return ({"fails": given[0], "runs": given[1]},
                f"{given[0]}/{given[1]} given with --rate (measured elsewhere)")
    if role != "probe":
        b = kernel.run_branch
        return rates.lookup(repro, kernel.arch, b, unpatched_build(kernel.arch, b))
    return probe_record(repro, kernel, sight, accel)


def probe_record(repro, kernel, sight, accel):
    """(record, source) for a probe row, or (None, why none applies): one
    measured on the kernel's own stable branch, on a kernel that shows every
    path the reproducer declares, as krepro's do (sight: detectors.Sight of
    this kernel), under accel (None: not checked)."""
    if not sight.full:
        return None, sight.note()
    rec, note = rates.lookup(repro, kernel.arch, kernel.branch, None, accel=accel)
    if rec is None and note.startswith("no recorded rate"):
        note = f"no recorded FAIL rate on branch {kernel.branch}"
    return rec, note


class PlanRow:
    """A row of the plan and its state while the run decides it."""

    def __init__(self, index, repro, kernel, role):
        self.index, self.repro, self.kernel, self.role = index, repro, kernel, role
        self.after = None      # the bug row whose runs give this row its rate
        self.row = None        # stats.Row, opened when the row may start
        self.rate = self.note = None
        self.sight = None      # detectors.Sight: what the kernel can show of the bug
        self.unbounded = None  # why a clean verdict of the row cannot be bounded
        self.alone = False
        self.n = 0             # guests started
        self.inflight = 0
        self.infra = 0         # boots that never reached the test
        self.done = False


class Scheduler:
    """Decides every row, up to `jobs` guests at a time. A row gets another
    guest only while undecided, and no more at once than its expected
    outcome would still need; a fixed row waits for its bug row, whose runs
    give it its rate; a guest that needs the host to itself runs alone, in
    plan order. run.json (record) is saved as each guest and row ends."""

    def __init__(self, config, metas, record, run_guest):
        # run_guest(row, n, rundir): the record of the row's n-th guest.
        self.config, self.metas, self.record, self.run_guest = config, metas, record, run_guest
        self.plan = [PlanRow(i, r, k, row_role(config.expect, k)) for i, (r, k) in
                     enumerate(((r, k) for r in config.repros for k in config.kernels), 1)]
        for pr in self.plan:
            if pr.role == "fixed":
                pr.after = next((q for q in self.plan if q.repro == pr.repro and q.role == "bug"), None)
        self.cond = threading.Condition()
        self.running = []     # (PlanRow, thread)
        self.live = {}        # guest number -> the guest's record if the run is cut off
        self.errors = []
        self.stopping = False
        self.guests = 0
        self.started = time.monotonic()

    def execute(self):
        try:
            with self.cond:
                while True:
                    if self.errors:
                        raise self.errors[0]
                    self.running = [(pr, t) for pr, t in self.running if t.is_alive()]
                    busy = self.start_guests()
                    if all(pr.done for pr in self.plan) and not busy:
                        break
                    self.cond.wait(timeout=1.0)
        except BaseException:
            self.stop()
            raise

    def start_guests(self):
        """Start every guest that may start now; the guests then running."""
        busy = sum(pr.inflight for pr in self.plan)
        alone_busy = any(pr.inflight and pr.alone for pr in self.plan)
        while busy < self.config.jobs and not alone_busy:
            pr = self.next_guest(busy)
            if pr is None:
                break
            self.start(pr)
            busy += 1
            alone_busy = pr.alone
        return busy

    def start(self, pr):
        pr.n += 1
        pr.inflight += 1
        self.guests += 1
        el = int(time.monotonic() - self.started)
        print(f"[row {pr.index}/{len(self.plan)} guest {self.guests}] {pr.repro:<20} "
              f"{pr.kernel.label:<10} run {pr.n:<3} booting ({el // 60}m{el % 60:02d}s elapsed)",
              file=sys.stderr, flush=True)
        name = f"{pr.repro}.{pr.kernel.label}.{pr.n}"
        # Logs relative to the results, as a finished run's are.
        self.live[self.guests] = {"repro": pr.repro, "kernel": pr.kernel.label, "run": pr.n,
                                  "log": f"{name}/console.log"}
        t = threading.Thread(target=self.worker, daemon=True,
                             args=(pr, pr.n, self.guests, os.path.join(self.config.results, name)))
        self.running.append((pr, t))
        t.start()

    def worker(self, pr, n, gi, rundir):
        try:
            res = self.run_guest(pr, n, rundir)
            with self.cond:
                if not self.stopping:
                    self.finish_guest(pr, n, gi, res, rundir)
        except BaseException as e:  # noqa: B902 -- handed to the main thread
            with self.cond:
                self.errors.append(e)
        finally:
            with self.cond:
                pr.inflight -= 1
                self.live.pop(gi, None)
                self.cond.notify_all()

    def stop(self):
        """Ctrl-C or a kill: stop every guest; what finished stays recorded."""
        with self.cond:
            self.stopping = True
            # The guests the stop cuts off: named in the report, not lost.
            self.record.data["cut_off"] = [self.live[g] for g in sorted(self.live)]
        guest.stop_all()
        for _, t in self.running:
            t.join(timeout=30)

    def next_guest(self, busy):
        """The first row, in plan order, that may take another guest now."""
        for pr in self.plan:
            if pr.done:
                continue
            if pr.row is None:
                if pr.after is not None and not pr.after.done:
                    continue
                self.open_row(pr)
                if pr.done:
                    continue
            if pr.inflight >= pr.row.expected_remaining():
                continue
            if pr.alone and busy:
                # Wait for the machine to empty rather than run anything past it.
                return None
            return pr
        return None

    def open_row(self, pr):
        c, m = self.config, self.metas[pr.repro]
        pr.alone = m.alone and c.jobs > 1
        pr.sight = detectors.Sight(m, pr.kernel.config)
        rec, pr.note = rate_record(pr.repro, pr.kernel, pr.role, pr.sight, self.record.data["accel"],
                                   c.rate)
        pr.rate = (rec["fails"], rec["runs"], pr.note) if rec else None
        if pr.role != "bug" and pr.rate is None:
            pr.unbounded = pr.note if pr.role == "probe" else "no FAIL rate"
        pr.row = stats.Row(pr.role, target=c.miss, cap=c.max_runs, rate=pr.rate,
                           repeat=c.repeat, any_report=c.any_report)
        if pr.sight.all_blind:
            # Nothing the guest could print would be this bug: a boot can
            # only come back clean, which says nothing.
            pr.row.blind("every evidence path is blind on this kernel")
            log(f"{pr.repro} on {pr.kernel.label}: not booted, undecided: {pr.sight.note()}; "
                "nothing else could show the bug")
            self.close_row(pr)
        elif pr.role == "probe" and pr.rate is None and not c.repeat:
            log(f"{pr.repro} on {pr.kernel.label}: {pr.unbounded}: a clean verdict cannot be "
                f"bounded; stops after {stats.Row.UNBOUNDED_CLEAN} clean runs")

    def count_infra(self, pr):
        """A boot that never reached the test: it says nothing about the bug.
        What the guest's line says of it."""
        pr.infra += 1
        self.record.data["infra_boots"] = self.record.data.get("infra_boots", 0) + 1
        return pr.row.lost_boot()

    def finish_guest(self, pr, n, gi, res, rundir):
        """A guest ended: record it, and the row when that decides it."""
        late = pr.row.decision is not None
        if late:
            res["after_decision"] = True
        infra = bool(res.get("infra")) and not late
        retry = self.count_infra(pr) if infra else ""
        self.record.data["runs"].append(res)
        if not late and not infra:
            pr.row.add(res["outcome"])
        self.record.save()
        print(f"[row {pr.index}/{len(self.plan)} guest {gi}] {pr.repro:<20} {pr.kernel.label:<10} run {n:<3}"
              f" {res['outcome']:<6} {res['seconds']:6.1f}s  {clean(res['evidence'])}"
              + (" (row already decided: recorded, not counted)" if late else "") + retry
              + ("" if res["outcome"] == "PASS" else f"\n       log: {rundir}/console.log")
              + (f"\n       report decoded to file:line: {rundir}/report.txt" if res.get("report") else "")
              + (f"\n       report not decoded: {clean(res['decode_error'])}" if res.get("decode_error") else ""),
              file=sys.stderr, flush=True)
        if late or pr.row.decision is None:
            return
        if pr.role == "bug":
            self.record.record_rates((pr.repro, pr.kernel.run_branch, pr.row.fails, pr.row.trials))
        self.close_row(pr)

    def close_row(self, pr):
        """A decided row: its record in run.json, and its cell said."""
        k = pr.kernel
        ev = pr.sight.record()
        if pr.role != "probe" and not pr.sight.blind:
            # Its rate is its own build's: an unknown config changes nothing
            # the cell claims.
            ev["note"] = None
        rec = render.row_record(pr.repro, k.label, pr.role, pr.row, self.metas[pr.repro],
                                self.config.expect, pr.note, index=pr.index, unbounded=pr.unbounded,
                                evidence=ev,
                                kernel_config=k.config_source if k.config is not None else None)
        rows = self.record.data["rows"]
        rows.append(rec)
        rows.sort(key=lambda r: r.get("index", 0))
        self.record.save()
        pr.done = True
        print(f"=> {pr.repro} on {pr.kernel.label}: {rec['cell']}", file=sys.stderr, flush=True)
