#!/usr/bin/env python3
"""Judge the `--set full` pages a GPU run kept (tests/gpu/run.sh: $OUT/sections/<program>/) again,
offline and without a GPU, by the sections check's own code (tests/gpu/checks_sections.py's section_check),
with the tools' runs replaced by the kept pages: kreplay.csv.gz and ncu.csv.gz, and where the run
made them kreplay_again.csv.gz, ncu_again.csv.gz, ncu_application.csv.gz, and metrics.json (the
metric behind each section row). A changed rule in checks_sections.py or details.py can so be tried on the
pages of earlier runs before it costs device time. The program's own verdict (its output) is not
kept, and not judged here.
Usage: python3 tests/gpu/rejudge.py DIR [DIR...]   (prints each directory's rows and experiment lines)"""
import atexit
import gzip
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def load_check():
    """tests/gpu/checks_sections.py as a module (with harness.py, whose rows it fills), with work
    and log folders of its own, removed at exit."""
    temp = tempfile.mkdtemp(prefix="kreplay-rejudge-")
    atexit.register(shutil.rmtree, temp, ignore_errors=True)
    for name in ("work", "out"):
        os.makedirs(os.path.join(temp, name))
    os.environ.update(KREPLAY_GPU_WORK=os.path.join(temp, "work"), KREPLAY_GPU_OUT=os.path.join(temp, "out"),
                      KREPLAY_GPU_ONLY="", KREPLAY_GPU_SECTIONS="", KREPLAY_GPU_SECTIONS_CACHE="all")
    sys.path.insert(0, HERE)
    import checks_sections
    return checks_sections


def unpack(kept, name, dest):
    """Kept page `name` into `dest`; False when the run did not keep it."""
    source = os.path.join(kept, name + ".csv.gz")
    if not os.path.exists(source):
        return False
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with gzip.open(source, "rb") as f, open(dest, "wb") as g:
        shutil.copyfileobj(f, g)
    return True


def rejudge(check, kept, tag):
    """Rows and experiment lines of section_check on the pages kept in `kept`."""
    def run(argv, groups=None, tag="", timeout=0, **_):
        out_dir = argv[argv.index("-d") + 1]
        page = "kreplay_again" if out_dir.endswith("_again") else "kreplay"
        found = unpack(kept, page, os.path.join(out_dir, "kept", "out_sections.csv"))
        return (0 if found else 1), "", "", None, 0.0

    def ncu_full(argv, launches, log_file):
        return (0 if unpack(kept, "ncu_again" if log_file.endswith("_again.csv") else "ncu", log_file) else 1), 0.0

    def ncu_application(argv, launches, metrics, log_file):
        return (0 if unpack(kept, "ncu_application", log_file) else 1), 0.0

    def section_metrics(out_dir):
        path = os.path.join(kept, "metrics.json")
        if not os.path.exists(path):
            return {}
        with open(path) as f:
            return {(section, label): metric for section, label, metric in json.load(f)}

    # section_check finds these by name in its own module: replaced there, its calls reach them.
    import harness
    harness.rows.clear()
    harness.experiments.clear()
    check.run, check.ncu_full, check.ncu_application, check.section_metrics = run, ncu_full, ncu_application, section_metrics
    twice = os.path.exists(os.path.join(kept, "ncu_again.csv.gz"))
    check.section_check(tag, ["kept pages"], lambda out: (True, "program's verdict not kept"), 0, ncu_twice=twice)
    return list(harness.rows), list(harness.experiments)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    check = load_check()
    for kept in sys.argv[1:]:
        rows, experiments = rejudge(check, kept, os.path.basename(os.path.normpath(kept)))
        print(f"== {kept}")
        for name, expected, seen, result in rows:
            print(f"{result}  {name}\n      {seen}")
        for line in experiments:
            print(f"experiment: {line}")


if __name__ == "__main__":
    main()
