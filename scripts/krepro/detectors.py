"""What a kernel can show of a reproducer's evidence.

A run FAILs by its evidence paths: each signature (a kernel report that is
this bug) and, when the reproducer has it, its own evidence (a case's
krepro_fail()). A path may show only with kernel options, its detectors
(--describe: "CONFIG_KASAN" for a KASAN report): on a kernel without one the
path is blind, the bug can happen there and say nothing. needs_kconfigs is
what triggers a bug; detectors are what make it visible.

Recorded FAIL rates are measured on krepro's kernels, which carry every
declared detector (tests/test-metadata.py checks the fragments): a rate says
nothing about a kernel blind to a path it counted.
"""
import re

# How a cell names a signature's path when its title gives no bug type.
KIND_NAMES = {"LIST": "list corruption", "FORTIFY": "fortify", "REFCOUNT": "refcount_t",
              "HANG": "hang"}
OWN = "own-evidence"


def has(cfg, opt):
    """Is opt ("CONFIG_X": =y or =m; "CONFIG_X=v": that value) set in cfg,
    a kernel's options {CONFIG_X: value}?"""
    name, eq, want = opt.partition("=")
    return cfg.get(name) == want if eq else cfg.get(name) in ("y", "m")


def lacks(cfg, opts):
    return [o for o in opts if not has(cfg, o)]


def path_name(sig):
    """A signature as a cell names its path: the bug type a KASAN or KFENCE
    title gives ("use-after-free"), else its kind."""
    m = re.match(r"\^?(?:KASAN|KFENCE): ([a-z-]+)", sig.title or "")
    return m.group(1) if m else KIND_NAMES.get(sig.kind, sig.kind or "?")


class Sight:
    """What one kernel can show of one reproducer's evidence (meta.Reproducer,
    or None before it is built: no paths known). cfg: the kernel's options,
    or None when its config is unknown."""

    def __init__(self, meta, cfg):
        self.paths = meta.evidence_paths if meta else []
        self.detectors = sorted({d for _, ds in self.paths for d in ds})
        self.known = cfg is not None
        self.blind = [] if cfg is None else \
            [(n, miss) for n, miss in ((n, lacks(cfg, ds)) for n, ds in self.paths) if miss]

    @property
    def unknown(self):
        """There are detectors to check and no config to check them in."""
        return not self.known and bool(self.detectors)

    @property
    def all_blind(self):
        """No path of the reproducer can show on this kernel."""
        return bool(self.paths) and len(self.blind) == len(self.paths)

    @property
    def full(self):
        """Every detector the reproducer declares is on: the kernel shows all
        that krepro's own kernels, where rates are recorded, show."""
        return not self.unknown and not self.blind

    def note(self):
        """What a cell says of it, or None when nothing is blind: the blind
        paths by the options they lack, or that the config is unknown."""
        if self.unknown:
            return "kernel config unknown: detectors not checked"
        groups = {}
        for name, missing in self.blind:
            names = groups.setdefault(", ".join(missing), [])
            if name not in names:
                names.append(name)
        return "; ".join(f"no {opts}: the {' and '.join(names)} path{'s' if len(names) > 1 else ''}"
                         f" cannot show" for opts, names in groups.items()) or None

    def record(self):
        """For run.json."""
        return {"detectors": self.detectors, "config_known": self.known, "note": self.note(),
                "blind": [{"path": n, "missing": m} for n, m in self.blind]}
