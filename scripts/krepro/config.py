"""A run's configuration: made once from the checked command line
(cli.settle()), and read, never changed, by everything after."""
import dataclasses

from . import branches


@dataclasses.dataclass(frozen=True)
class RunConfig:
    arch: str
    kernels: tuple          # kernels.Kernel, in command-line order
    repros: tuple
    results: str            # the run directory
    miss: float             # target miss probability of a clean row
    max_runs: int
    repeat: int = None      # fixed mode: exactly this many guests a row
    timeout: int = None     # --timeout: every guest's limit, else each reproducer's
    jobs: int = 1
    via: str = "qemu"       # qemu | lava-run | lava:IDENTITY
    artifacts: tuple = None  # (directory, URL) a lab downloads from
    accel: str = "tcg"      # tcg | kvm | auto
    initrd: str = None      # $KREPRO_INITRD: a guest image of the user's
    expect: bool = False
    any_report: bool = False
    record_rates: bool = False
    keep: bool = False
    gdb: int = None
    append: str = ""
    qemu_extra: tuple = ()
    branch: str = branches.DEFAULT  # --branch: the stable branch of krepro's flavours
    rate: tuple = None      # --rate: (FAILs, runs) measured elsewhere, weighing clean probe rows

    @property
    def lab(self):
        """The lavacli identity of --via lava:ID, else None."""
        return self.via[5:] if self.via.startswith("lava:") else None

    def mode(self):
        """How rows are decided, as run.json records it."""
        if self.repeat:
            return {"kind": "fixed", "repeat": self.repeat}
        return {"kind": "sequential", "miss": self.miss, "cap": self.max_runs}
