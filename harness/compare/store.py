"""Compare files: the verdict CSV and its ``.meta.json`` (rule + both environments), written atomically, and read
back by every later stage (publish, report, explain) through :func:`load_compare`."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from harness.compare.compare import Comparison
from harness.compare.paths import meta_path
from harness.errors import HarnessError
from harness.fsutil import atomic_write, write_text
from harness.results import integrity, v1
from harness.verdict.rule import VERDICTS, Rule, verdict_codes


def locate_results(named: str, compare_csv: str | os.PathLike[str]) -> Path | None:
    """A results file named in a comparison's metadata: at that path, else beside the comparison (the two are
    often moved together, e.g. in a CI artifact); None when neither exists."""
    for p in (Path(named), Path(compare_csv).parent / Path(named).name):
        if named and p.is_file():
            return p
    return None


def write_csv(table: pd.DataFrame, out: Path) -> None:
    """pyarrow's CSV writer when present (a million rows in ~1 s), pandas' otherwise (~15 s); through a
    temporary file, so a reader never sees half a table."""
    with atomic_write(out, "wb") as fh:
        try:
            import pyarrow as pa
        except ImportError:
            table.to_csv(fh, index=False)
            return
        _write_arrow(pa.Table.from_pandas(table, preserve_index=False), fh)


#: tables of at least this many rows are written as two halves formatted at once (the writer runs without the GIL)
SPLIT_ROWS = 100_000
#: rows the writer formats at a time: its default (1,024) spends ~12 % of a million rows on per-batch work
BATCH_ROWS = 65_536


def _write_arrow(data: Any, fh: IO[bytes]) -> None:
    """The CSV of an Arrow table. Rows are formatted independently, so the second half's text, written to a file of
    its own on another thread while the first half is written, is the same bytes a single pass would append."""
    import pyarrow.csv as pacsv

    if data.num_rows < SPLIT_ROWS:
        pacsv.write_csv(data, fh, pacsv.WriteOptions(batch_size=BATCH_ROWS))
        return
    half = data.num_rows // 2
    # a file, not Arrow's growing buffer in memory: that one's reallocations and fresh pages cost up to 0.8 s more
    with tempfile.TemporaryFile(dir=_folder(fh)) as tail, ThreadPoolExecutor(1) as pool:
        done = pool.submit(_write_rows, data.slice(half), tail)
        pacsv.write_csv(data.slice(0, half), fh, pacsv.WriteOptions(batch_size=BATCH_ROWS))
        done.result()
        fh.flush()
        _append(tail, fh)


def _folder(fh: IO[bytes]) -> str | None:
    """The folder of ``fh``'s file, where a file copied into it is copied fastest (one file system)."""
    name = getattr(fh, "name", None)
    return os.path.dirname(os.path.abspath(name)) if isinstance(name, str) else None


def _write_rows(data: Any, out: IO[bytes]) -> None:
    """``data``'s rows as CSV, without a header."""
    import pyarrow.csv as pacsv

    pacsv.write_csv(data, out, pacsv.WriteOptions(include_header=False, batch_size=BATCH_ROWS))
    out.flush()


def _append(src: IO[bytes], dst: IO[bytes]) -> None:
    """All of ``src`` appended to ``dst``, copied by the kernel where it can (no pass through Python's memory)."""
    size = os.fstat(src.fileno()).st_size
    src.seek(0)
    done = 0
    try:
        while done < size:
            step = os.copy_file_range(src.fileno(), dst.fileno(), size - done)
            if step == 0:
                break
            done += step
    except (AttributeError, OSError):  # no copy_file_range here (not Linux, an old kernel, two file systems)
        pass
    dst.seek(0, os.SEEK_END)  # the kernel moved the file's offset: Python's file object learns it
    if done < size:
        src.seek(done)
        shutil.copyfileobj(src, dst, 1 << 20)


def write_compare(cmp: Comparison, out: str | os.PathLike[str]) -> Path:
    """Write the verdict CSV and its ``.meta.json`` (rule + both environments) beside it."""
    out = Path(out)
    rounded = ("golden_us", "tot_us", "delta_us", "delta_pct", "limit_us")
    table = cmp.table.assign(**{c: cmp.table[c].round(4) for c in rounded})  # the other columns are not copied
    write_csv(table, out)
    meta = {**cmp.meta(), integrity.KEY: integrity.record(out, len(table))}
    write_text(meta_path(out), json.dumps(meta, indent=2, default=str) + "\n")
    return out


def _skips_of_old_files(table: pd.DataFrame, rule: Rule) -> pd.Series:
    """Verdicts with the skip verdicts applied: files written before they existed called a case whose status is
    ``skipped`` ``failed_in_*``. Which side was timed follows from the old verdict, so the rule is re-applied
    to the statuses alone."""
    verdict = table["verdict"].astype(object)
    failed = verdict.isin(["failed_in_tot", "failed_in_golden", "failed_in_both"]).to_numpy()
    if not failed.any() or "golden_status" not in table.columns or "tot_status" not in table.columns:
        return verdict
    v, n = verdict[failed], int(failed.sum())
    g_status, t_status = table["golden_status"][failed], table["tot_status"][failed]
    yes = np.ones(n, dtype=bool)
    codes = verdict_codes(
        np.full(n, np.nan),
        np.full(n, np.nan),
        yes,
        yes,
        (v == "failed_in_tot").to_numpy(),
        (v == "failed_in_golden").to_numpy(),
        rule,
        (g_status == "skipped").to_numpy(),
        (t_status == "skipped").to_numpy(),
    )
    out = verdict.copy()
    out[failed] = np.asarray(VERDICTS, dtype=object)[codes]
    return out


def load_compare(path: str | os.PathLike[str]) -> Comparison:
    """Read a compare CSV written by :func:`write_compare` (for publish/report/explain)."""
    p = Path(path)
    if not p.is_file():
        raise HarnessError(f"{p}: no such compare file")
    try:
        table = pd.read_csv(p, keep_default_na=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise HarnessError(f"{p}: not a compare CSV: {err}") from None
    missing = [c for c in ("kernel", "case_id", "golden_us", "tot_us", "verdict") if c not in table.columns]
    if missing:
        raise HarnessError(f"{p}: line 1: missing column '{missing[0]}': not written by `harness compare`")
    bad = ~table["verdict"].isin(VERDICTS)
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise HarnessError(f"{p}: line {i + 2}: unknown verdict {table['verdict'].iloc[i]!r}")
    table = v1.upgrade_compare(table)
    meta_p = meta_path(p)
    meta = json.loads(meta_p.read_text()) if meta_p.exists() else {}
    integrity.check(p, meta, len(table), meta_p)
    try:
        rule = Rule.read(meta.get("rule"))
    except ValueError as err:  # an edited or foreign meta.json: one line naming it
        raise HarnessError(f"{meta_p}: rule: {err}") from None
    calibration = meta.get("calibration") or {}
    if isinstance(calibration, str):  # written before the record: the path --calibration named
        calibration = {"path": calibration, "source": "--calibration"}
    table["verdict"] = _skips_of_old_files(table, rule)
    table["note"] = table["note"].astype(object).fillna("") if "note" in table.columns else ""
    return Comparison(
        table=table,
        rule=rule,
        golden_env=meta.get("golden", {}).get("env", {}),
        tot_env=meta.get("tot", {}).get("env", {}),
        golden_path=meta.get("golden", {}).get("path", ""),
        tot_path=meta.get("tot", {}).get("path", ""),
        calibration=calibration if isinstance(calibration, dict) else {},
        process_noise=meta.get("process_noise") if isinstance(meta.get("process_noise"), dict) else {},
    )
