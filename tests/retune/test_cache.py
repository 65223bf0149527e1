"""harness/retune/cache.py: timings kept across retunes and kills, by everything they depend on."""

from __future__ import annotations

from harness.retune.cache import Cache, Entry, digest, make_key, source_hash


def key(config, stack="triton 3.9.0 at /t", tag="search"):
    return make_key("k", "abc", "M16", config, stack, "GPU-1", tag)


def test_entries_survive_a_reload_and_a_torn_last_line(tmp_path):
    c = Cache(tmp_path / "cache.jsonl")
    assert c.loaded == 0 and c.get(key({"BM": 64})) is None
    c.add(
        [Entry(key({"BM": 64, "w": 4}), "ok", 12.5), Entry(key({"BM": 128}), "compile_error", None, "out of resource")]
    )
    c.add([Entry(key({"w": 4, "BM": 64}), "ok", 99.0)])  # the same key (config order does not matter): kept once
    with open(tmp_path / "cache.jsonl", "a") as fh:
        fh.write('{"key": {"kernel": "k", "sou')  # a kill in the middle of a line
    again = Cache(tmp_path / "cache.jsonl")
    assert again.loaded == 2
    assert again.get(key({"w": 4, "BM": 64})).time_us == 12.5
    assert again.get(key({"BM": 128})).error == "out of resource"
    assert again.get(key({"BM": 64, "w": 4}, stack="triton 3.6.0 at /g")) is None  # another stack
    assert again.get(key({"BM": 64, "w": 4}, tag="guard:x:tot_new")) is None  # another purpose


def test_source_hash_follows_the_kernel_file(tmp_path):
    f = tmp_path / "k.py"
    f.write_text("A = 1\n")
    h = source_hash(f"{f}:Cls")
    assert h == source_hash(f) and len(h) == 12
    f.write_text("A = 2\n")
    assert source_hash(f) != h and source_hash(tmp_path / "none.py") == ""
    assert digest(1, {"a": [2]}) == digest(1, {"a": [2]}) != digest(2)


def test_a_timing_keeps_its_reps_and_an_older_cache_line_reads_without_them(tmp_path):
    """The guard's confidence needs each timing's reps after a resume; a line cached before they were kept reads
    with none (and the guard then judges by the point estimate, as it did)."""
    import json

    c = Cache(tmp_path / "cache.jsonl")
    ev = {"reps": 3, "rep_times_us": "[99.9, 100.0, 100.1]", "spread_pct": 0.2, "sm_clock_mhz": None}
    c.add([Entry(key({"BM": 64}), "ok", 100.0, "", ev)])
    with open(tmp_path / "cache.jsonl", "a") as fh:
        old = {"key": {**key({"BM": 128}).__dict__}, "status": "ok", "time_us": 90.0, "error": ""}
        fh.write(json.dumps(old) + "\n")
    again = Cache(tmp_path / "cache.jsonl")
    assert again.get(key({"BM": 64})).row() == {"status": "ok", "time_us": 100.0, **ev}
    assert again.get(key({"BM": 128})).evidence is None
    assert again.get(key({"BM": 128})).row() == {"status": "ok", "time_us": 90.0}
