"""Section `cache`: the CLI's device-identity cache (stored, used, healed when stale, off)."""
import json
import os
import re

from harness import CHECKS, GROUPS, KREPLAY, WORK, cli_csv_values, result_line, row, run


def identity_cache_checks():
    """The CLI's device-identity cache: the second run checks the groups without touching the
    GPU, gives the same counters; a stale entry is healed; `off` writes nothing."""
    cache = os.path.join(WORK, "identity-cache")
    cache_file = os.path.join(cache, "device-identity.json")
    env = {"KREPLAY_CACHE_DIR": cache, "KREPLAY_LOG": "debug"}

    def cli(tag, env_extra):
        out_dir = os.path.join(WORK, f"cache_{tag}")
        argv = [KREPLAY, "--pmc", *GROUPS[0], "--pmc", *GROUPS[1], "--replay-mode", "kernel",
                "--kernel-replay-beta-enabled", "-d", out_dir, "-o", "out", "-f", "csv", "--", CHECKS, "inplace"]
        rc, out, err, _, wall = run(argv, None, tag=f"cache_{tag}", env_extra=env_extra)
        checked = re.search(r"counter groups checked (?:in |by an earlier run with this GPU's identity \()([0-9.]+) ms", err)
        status, _ = result_line(out, "inplace")
        return rc, status, err, (float(checked.group(1)) if checked else None), cli_csv_values(out_dir), wall

    rc1, st1, err1, ms1, v1, w1 = cli("first", env)
    stored = json.load(open(cache_file))["entries"] if os.path.exists(cache_file) else []
    rc2, st2, err2, ms2, v2, w2 = cli("second", env)
    from_cache = "device identity from the cache" in err2 or "checked by an earlier run" in err2
    ok = (rc1 == rc2 == 0 and st1 == st2 == "PASS" and len(stored) == 1 and stored[0]["chip"] == "GH100"
          and from_cache and v1 and v1 == v2 and ms2 is not None and ms1 is not None and ms2 < ms1)
    row("identity cache: second run from the cache", "entry GH100 stored; 2nd run from cache (or its group verdicts), checks faster, same counters",
        f"{len(stored)} entr(y/ies) {[e['chip'] for e in stored]}; from cache {from_cache}; checks {ms1} -> {ms2} ms; "
        f"wall {w1:.2f} -> {w2:.2f} s; warps {v1[:2]} vs {v2[:2]}; {st1}/{st2}", ok)

    # A stale entry (one byte of the image changed): the run must still be right, and the entry
    # must not survive it (CUPTI refuses the image and the CLI reads the device again, or the
    # library reports a different identity and the CLI drops it).
    good = stored[0]["availability"] if stored else ""
    if stored:
        entries = json.load(open(cache_file))
        last = good[-2:]
        entries["entries"][0]["availability"] = good[:-2] + ("00" if last != "00" else "01")
        bad = entries["entries"][0]["availability"]
        json.dump(entries, open(cache_file, "w"))
    rc3, st3, err3, _, v3, _ = cli("stale", env)
    after = json.load(open(cache_file))["entries"] if os.path.exists(cache_file) else []
    healed = stored and all(e["availability"] != bad for e in after)
    path = ("library warned, entry dropped" if "device identity the counter groups were checked with" in err3
            else "image refused, device read again" if "device identity from the cache" not in err3 and "checked by an earlier run" not in err3
            else "used as is")
    row("identity cache: stale entry healed", "run right, same counters, stale entry gone",
        f"rc {rc3} {st3}; {path}; warps {v3[:2]}; entries after {len(after)}, stale gone {healed}",
        rc3 == 0 and st3 == "PASS" and v3 == v1 and healed)

    off = os.path.join(WORK, "identity-cache-off")
    rc4, st4, _, _, v4, _ = cli("off", {"KREPLAY_CACHE_DIR": "off", "XDG_CACHE_HOME": off, "KREPLAY_LOG": "debug"})
    row("identity cache: KREPLAY_CACHE_DIR=off", "nothing written, run right",
        f"rc {rc4} {st4}; files {os.listdir(off) if os.path.exists(off) else []}",
        rc4 == 0 and st4 == "PASS" and not os.path.exists(off) and v4 == v1)
