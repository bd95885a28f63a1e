"""What runs one guest: a backend takes a GuestSpec and gives a GuestResult,
whichever it is (QEMU here: guest.Qemu; a LAVA job through lava-run here,
or in a lab: lava.LavaRun, lava_lab.Lab). The verdict is read from the files it
leaves in the run directory, console.log and ktap.txt, the same for all."""
import dataclasses
from typing import Callable, Optional


@dataclasses.dataclass(frozen=True)
class GuestSpec:
    """One guest to run."""
    name: str              # for people: "<repro> on <kernel> run <n>"
    arch: str
    accel: str
    image: str             # the kernel
    initrd: str            # the guest image
    cmdline: str
    cpus: int
    rundir: str
    limit: int             # wall-clock seconds
    disk: Optional[str] = None
    jobs: int = 1          # the machine's guest slots
    alone: bool = False    # with the host to itself
    # Is the run's answer already known from this console text (the bug's
    # own report, ended, and the reproducer's verdicts)? Then the guest may
    # be stopped early (guest.supervise()).
    # early_stop.Watch: None, "report", "complete" or "own" for a console text.
    answered: Optional[Callable[[str], Optional[str]]] = None


@dataclasses.dataclass
class GuestResult:
    """How one guest ended. The outcome is not here: verdict.decide() reads
    it from the run directory's console.log and ktap.txt."""
    status: Optional[int]  # the exit status of what ran it (QEMU, lava-run; a lab: 0 Complete)
    timed_out: bool
    seconds: float
    stopped_early: bool = False
    # The guest's seconds when the bug's report was seen ended, and when
    # its answer was complete (answer.Watch); None when never.
    report_seen: Optional[float] = None
    answer_complete: Optional[float] = None
    via: dict = dataclasses.field(default_factory=lambda: {"via": "qemu"})
    # Why the guest never ran (the lab refused the job), or None.
    refused: Optional[str] = None


def stopped(stop):
    """GuestResult's fields from guest.supervise()'s stop."""
    return {"stopped_early": stop["early"], "report_seen": stop["report"],
            "answer_complete": stop["complete"]}


class Backend:
    """Runs one guest to its end."""

    def run(self, spec: GuestSpec) -> GuestResult:
        raise NotImplementedError
