"""Recorded FAIL rates: what a reproducer's bug row measured, and where.

repro/<id>/fail-rate.json holds, per stable branch and arch ({"6.1": {"x86_64":
record}}), the calibration that was committed
(`make calibrate`): fails, runs, date, krepro commit, the accelerator its
guests ran under (a record without one was measured under TCG), and the
unpatched kernel's build stamp (a hash of the source tree, patches and config
fragments, the same on every machine). A row's own bug runs add to a copy under the cache
(fail-rates/<id>.<branch>.<arch>.json) that starts from that record; a new calibration
or another kernel build makes the copy void. A record may be carried to a
build whose code is the same ("measured_on": the build it was measured on and
why the code is the same: only debug information added, or only the patches'
mail text changed, which the stamp used to hash), never further.

A bug or fixed row takes the record of its unpatched build. A probe row (any
other kernel) takes one only where it was measured: of the kernel's own
branch (a record of one branch never bounds a miss on another), and the runner checks that
the kernel shows every evidence path the record counted (detectors.py), and
lookup() that the guests run under the record's accelerator, since a race's
odds under KVM are not those under TCG.
"""
import datetime
import json
import os

from .log import log
from .paths import TOP, cache, repro_dir


def repo_path(repro):
    return os.path.join(repro_dir(), repro, "fail-rate.json")


def load_repo(repro):
    """The committed records, repro/<id>/fail-rate.json ({branch: {arch:
    record}}), or None."""
    return _load(repo_path(repro))


def repo_record(repro, arch, branch):
    """The committed record of one branch and arch, or None."""
    data = load_repo(repro)
    got = data.get(branch) if isinstance(data, dict) else None
    rec = got.get(arch) if isinstance(got, dict) else None
    return rec if isinstance(rec, dict) else None


def cache_path(repro, arch, branch):
    return os.path.join(cache(), "fail-rates", f"{repro}.{branch}.{arch}.json")


def _load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(path + ".tmp", path)


def carried(rec):
    """A record carried to a build whose code is the same (only debug
    information added): the build it was measured on."""
    was = (rec or {}).get("measured_on")
    return f" (measured on build {was['build'][:12]}: {was['why']})" if was else ""


def accel_of(rec):
    """The accelerator a record's runs had: "tcg" for records written before
    it was kept (all were TCG), "mixed" for a cache copy that got runs under
    another one."""
    return (rec or {}).get("accel") or "tcg"


def describe(rec):
    """A record as a cell's source: what was measured, when, on which build
    (and under which accelerator, when it is not TCG)."""
    build = (rec.get("build") or "?")[:12]
    if accel_of(rec) != "tcg":
        build += f" under {accel_of(rec)}"
    base = rec.get("base")
    if "added_runs" not in rec:
        cut = f" (calibration of {rec['planned']} cut short)" if rec.get("planned") else ""
        return f"{rec['fails']}/{rec['runs']} recorded {rec.get('date', '?')}, build {build}{carried(rec)}{cut}"
    if base and base.get("build") == rec.get("build"):
        return (f"{base['fails']}/{base['runs']} recorded {base.get('date', '?')}, build {build}"
                f"{carried(base)}, +{rec['added_fails']}/{rec['added_runs']} in rows here since")
    return f"{rec['fails']}/{rec['runs']} measured in rows here since {rec.get('date', '?')}, build {build}"


def lookup(repro, arch, branch, build, accel=None):
    """The usable record of `branch` for a bug kernel of stamp `build` (None:
    any build of the branch, for kernels that are not krepro's), measured
    under `accel` (None: any). Returns (record or None, note)."""
    if branch is None:
        return None, "the kernel's stable branch is unknown: no recorded rate applies"
    repo = repo_record(repro, arch, branch)
    cached = _load(cache_path(repro, arch, branch))
    cands = [rec for rec, ok in ((cached, cached and cached.get("base") == repo), (repo, repo))
             if ok and (build is None or rec.get("build") == build)]
    for rec in cands:
        if accel is None or accel_of(rec) == accel:
            return rec, describe(rec)
    if cands:
        return None, (f"the recorded rate was measured under {accel_of(cands[-1])}, "
                      f"this run is under {accel}")
    if repo:
        return None, (f"recorded rate is for build {repo.get('build', '?')[:12]}, "
                      f"the bug kernel is {build[:12]}: measured in this run")
    return None, f"no recorded rate on branch {branch}: measured in this run"


def add_runs(repro, arch, branch, build, fails, runs, accel):
    """Fold a bug row's runs into the cache copy of the branch's record; a
    copy that gets runs under another accelerator than its own is "mixed"."""
    if not build or runs <= 0:
        return
    repo = repo_record(repro, arch, branch)
    cached = _load(cache_path(repro, arch, branch))
    if not (cached and cached.get("base") == repo and cached.get("build") == build):
        base = repo if repo and repo.get("build") == build else None
        cached = {"base": repo, "build": build, "fails": base["fails"] if base else 0,
                  "runs": base["runs"] if base else 0, "date": base["date"] if base else
                  datetime.date.today().isoformat(), "added_fails": 0, "added_runs": 0,
                  "accel": accel_of(base) if base else accel}
    if accel_of(cached) != accel:
        cached["accel"] = "mixed"
    cached["fails"] += fails
    cached["runs"] += runs
    cached["added_fails"] = cached.get("added_fails", 0) + fails
    cached["added_runs"] = cached.get("added_runs", 0) + runs
    _write(cache_path(repro, arch, branch), cached)


def record(repro, arch, branch, build, fails, runs, seconds, commit, accel, planned=None):
    """A calibration: replaces the committed record for this branch and arch. One still
    running or interrupted (runs < planned) says so, and replaces a record of
    the same build only once it has at least as many runs: what a longer
    calibration measured is not lost to a shorter one. Returns whether it
    was written."""
    path = repo_path(repro)
    data = _load(path) or {}
    old = repo_record(repro, arch, branch)
    partial = planned is not None and runs < planned
    if partial and old and old.get("build") == build and old.get("runs", 0) > runs:
        return False
    secs = sorted(seconds)
    data.setdefault(branch, {})[arch] = {"build": build, "fails": fails, "runs": runs, "accel": accel,
                  "date": datetime.date.today().isoformat(), "krepro": commit,
                  "seconds": [secs[0], secs[len(secs) // 2], secs[-1]] if secs else []}
    if partial:
        data[branch][arch]["planned"] = planned
    _write(path, data)
    return True


def record_run(results, arch, branch, repros, build, planned, rec=None):
    """make calibrate: the unpatched rows of the run in results (or of its
    run.json's data, rec) become the committed records (build: the unpatched
    kernel's stamp; planned: the runs a row was asked for). Called after
    every guest, so a calibration cut short keeps what it measured, and once
    at the end."""
    if rec is None:
        with open(os.path.join(results, "run.json")) as f:
            rec = json.load(f)
    for r in repros:
        runs = [x for x in rec["runs"] if x["repro"] == r and x["kernel"] == "unpatched"]
        trials = [x for x in runs if x["outcome"] in ("FAIL", "PASS", "OTHER")]
        if not trials:
            continue
        fails = sum(1 for x in trials if x["outcome"] == "FAIL")
        if record(r, arch, branch, build, fails, len(trials), [x["seconds"] for x in runs],
                  rec["krepro"], rec["accel"], planned) and len(trials) >= planned:
            log(f"{r}: FAIL {fails}/{len(trials)} recorded in {os.path.relpath(repo_path(r), TOP)}")
