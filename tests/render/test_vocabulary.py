"""One look per verdict, shared by every renderer; one name per case."""

from __future__ import annotations

from harness.publish.sheets import VERDICT_COLORS
from harness.render.terminal import SHORT, STYLE
from harness.render.vocabulary import LOOKS, STACKS, case_label, rgb, stack_labels
from harness.report.plots import VERDICT_COLORS as PLOT_COLORS
from harness.verdict.rule import VERDICTS


def test_every_verdict_has_one_look_used_everywhere():
    assert set(LOOKS) == set(VERDICTS)
    assert {v: look.style for v, look in LOOKS.items()} == STYLE
    assert {v: look.short for v, look in LOOKS.items()} == SHORT
    assert all(PLOT_COLORS[v] == LOOKS[v].color for v in PLOT_COLORS)
    assert VERDICT_COLORS["regression"] == rgb(LOOKS["regression"].fill) == (0.957, 0.78, 0.765)
    assert "ok" not in VERDICT_COLORS  # no fill: the row stays white


def test_a_case_is_named_kernel_slash_id():
    assert case_label("gemm", "M16_N32_K64") == "gemm/M16_N32_K64"


def test_the_stacks_are_called_as_the_comparison_names_them():
    assert STACKS == ("golden", "TOT")
    assert stack_labels({"env_name": "main"}, {"env_name": "pr"}) == ("main", "pr")
    assert stack_labels({"env_name": "golden"}, {"env_name": "tot"}) == ("golden", "TOT")
    assert stack_labels({"env_name": "golden"}, {"env_name": "triton-3.9.0"}) == ("golden", "triton-3.9.0")
    assert stack_labels({"env_name": "tot"}, {"env_name": "golden"}) == ("TOT", "golden")  # swapped: as recorded


def test_missing_or_equal_names_keep_golden_and_tot():
    assert stack_labels({}, {}) == stack_labels(None, None) == ("golden", "TOT")
    assert stack_labels({"env_name": "main"}, {}) == ("golden", "TOT")  # one side unnamed: no pair of names to show
    assert stack_labels({"env_name": "golden"}, {"env_name": "golden"}) == ("golden", "TOT")  # one env run twice
    assert stack_labels({"env_name": "Main"}, {"env_name": "main "}) == ("golden", "TOT")


def test_counts_take_the_number_their_noun_needs():
    from harness.errors import counted
    from harness.render.vocabulary import regressions

    assert [counted(n, "case") for n in (0, 1, 2)] == ["0 cases", "1 case", "2 cases"]
    assert counted(1, "entry", "entries") == "1 entry" and counted(3, "entry", "entries") == "3 entries"
    assert (regressions(1), regressions(2, 1)) == ("1 regression", "2 regressions (1 ambiguous)")
