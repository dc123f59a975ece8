#!/usr/bin/env python3
"""The sections check's rule (tests/gpu/checks_sections.py's section_check, through tests/gpu/rejudge.py) on
small made-up pages, without a GPU: run by .ci/run, so that a change to the rule is judged before
it costs device time. Ten kernels, each with a deterministic row and two timed rows."""
import csv
import gzip
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rejudge  # noqa: E402

KERNELS = range(10)
NAME = "scale(float*, int)"
ROWS = {"Duration": ("gpu__time_duration.sum", 1000.0), "SM Active Cycles": ("sm__cycles_active.avg", 100.0)}
CHECK = rejudge.load_check()


def page(values, section="S", by_metric=False):
    """A `--csv --page details` page: values maps (kernel, label) to a value (the rest default);
    by_metric writes ncu's --metrics layout (a row per metric, as its application replay)."""
    text = io.StringIO()
    w = csv.writer(text, quoting=csv.QUOTE_ALL)
    w.writerow(["ID", "Kernel Name", "Section Name", "Metric Name", "Metric Unit", "Metric Value"])
    for k in KERNELS:
        if not by_metric:
            w.writerow([k, NAME, section, "Grid Size", "", 8])
        for label, (metric, default) in ROWS.items():
            w.writerow([k, NAME, "Command line profiler metrics" if by_metric else section,
                        metric if by_metric else label, "", values.get((k, label), default)])
    return text.getvalue()


def kept(pages, folder):
    for name, text in pages.items():
        with gzip.open(os.path.join(folder, name + ".csv.gz"), "wt") as f:
            f.write(text)
    with open(os.path.join(folder, "metrics.json"), "w") as f:
        json.dump([["S", label, metric] for label, (metric, _) in ROWS.items()], f)
    return folder


def verdict(pages):
    with tempfile.TemporaryDirectory(prefix="kreplay-rules-") as folder:
        rows, _ = rejudge.rejudge(CHECK, kept(pages, folder), "made up")
    [result] = [r[3] for r in rows if r[0].startswith("--set full == ")]
    return result


# kreplay's durations 30% long on three kernels: 17 of 20 rows within (85%).
LONG = {(k, "Duration"): 1300.0 for k in (0, 1, 2)}


class SectionRule(unittest.TestCase):
    def test_all_within_passes_on_one_ncu_run(self):
        self.assertEqual(verdict({"kreplay": page({}), "ncu": page({})}), "PASS")

    def test_below_ninety_percent_fails_on_one_ncu_run(self):
        self.assertEqual(verdict({"kreplay": page(LONG), "ncu": page({})}), "FAIL")

    def test_deterministic_row_that_differs_fails(self):
        ours = page({}).replace('"Grid Size","","8"', '"Grid Size","","16"', 1)
        self.assertEqual(verdict({"kreplay": ours, "ncu": page({})}), "FAIL")

    def test_arbiter_finding_kreplay_closer_passes(self):
        pages = {"kreplay": page(LONG), "kreplay_again": page(LONG), "ncu": page({}), "ncu_again": page({}),
                 "ncu_application": page(LONG, by_metric=True)}
        self.assertEqual(verdict(pages), "PASS")

    def test_arbiter_finding_ncu_closer_fails(self):
        pages = {"kreplay": page(LONG), "kreplay_again": page(LONG), "ncu": page({}), "ncu_again": page({}),
                 "ncu_application": page({}, by_metric=True)}
        self.assertEqual(verdict(pages), "FAIL")

    def test_no_application_replay_decides_nothing(self):
        pages = {"kreplay": page(LONG), "kreplay_again": page(LONG), "ncu": page({}), "ncu_again": page({})}
        self.assertEqual(verdict(pages), "FAIL")

    def test_more_than_twenty_percent_far_fails_whatever_the_arbiter(self):
        longer = {(k, "Duration"): 1300.0 for k in range(5)}
        pages = {"kreplay": page(longer), "kreplay_again": page(longer), "ncu": page({}), "ncu_again": page({}),
                 "ncu_application": page(longer, by_metric=True)}
        self.assertEqual(verdict(pages), "FAIL")


if __name__ == "__main__":
    unittest.main()
