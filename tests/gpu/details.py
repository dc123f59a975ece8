"""The `--csv --page details` pages of `--set full` (Nsight Compute's and kreplay's, which writes
the same columns) and the rule that compares them: shared by the GPU checks (tests/gpu/checks_sections.py)
and the probes that read such pages (bench/probes/sections_spread.py)."""
import csv
import os

# Rows of the sections page whose values do not depend on timing, caches or clocks: they must
# equal Nsight Compute's exactly; the others within SECTION_TOLERANCE (docs/sections.md).
# (Issued instructions include re-issues: ncu's own differ run to run, 868,024 against 867,986.)
DETERMINISTIC_LABELS = {"Grid Size", "Block Size", "Threads", "Registers Per Thread", "Executed Instructions",
                        "Static Shared Memory Per Block", "Dynamic Shared Memory Per Block",
                        "# SMs", "Block Limit Registers", "Block Limit Warps", "Block Limit SM",
                        "Driver Shared Memory Per Block"}
SECTION_TOLERANCE = 0.10
# Values closer than this to Nsight Compute's count as equal whatever their ratio (percentages and
# rates of tiny kernels near 0).
SECTION_FLOOR = 0.5


def details_rows(lines, units=None, names=None):
    """(ID, section, label) -> value text of `--csv --page details` lines (ncu's or kreplay's);
    each row's unit into `units` and each ID's kernel name into `names` when given."""
    rows = {}
    header = None
    for cells in csv.reader(lines):
        if cells and cells[0] == "ID":
            header = cells
            continue
        # ncu leaves out the empty rule columns at the end of a row that has no rule.
        if header and len(header) >= len(cells) > header.index("Metric Value") and cells[0].isdigit():
            r = dict(zip(header, cells))
            key = (int(r["ID"]), r["Section Name"], r["Metric Name"])
            rows[key] = r["Metric Value"]
            if units is not None:
                units[key] = r["Metric Unit"]
            if names is not None:
                names[key[0]] = r["Kernel Name"]
    return rows


def page_rows(path, units=None, names=None):
    """details_rows of the page at `path`; {} when there is none (its tool did not write it)."""
    if not path or not os.path.exists(path):
        return {}
    with open(path, newline="") as f:
        return details_rows(f, units, names)


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def far_rows(keys, ours, theirs):
    """The rows of `keys` whose values differ by more than SECTION_TOLERANCE (and SECTION_FLOOR)."""
    return [k for k in keys if abs(number(ours[k]) - number(theirs[k]))
            > max(SECTION_TOLERANCE * abs(number(theirs[k])), SECTION_FLOOR)]


def outside_envelope(keys, value, references):
    """The rows of `keys` whose `value` lies outside the span of their `references` (each a
    row -> value text), widened by SECTION_TOLERANCE (and SECTION_FLOOR) on each side: far
    from every value ncu gave and not between two of them."""
    far = []
    for k in keys:
        seen = [number(r[k]) for r in references if number(r.get(k, "n/a")) is not None]
        if not seen:
            continue
        widen = [max(SECTION_TOLERANCE * abs(x), SECTION_FLOOR) for x in seen]
        low = min(x - w for x, w in zip(seen, widen))
        high = max(x + w for x, w in zip(seen, widen))
        if not low <= number(value[k]) <= high:
            far.append(k)
    return far
