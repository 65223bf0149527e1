"""AITER's rule's parameters (ROCm/aiter#3283): :class:`harness.verdict.rule.Rule`'s defaults, in a module without
numpy, so that the command line (harness/cli/options.py) shows them as the defaults of ``--rel``, ``--abs-us`` and
``--min-golden-us`` without loading the compare stage."""

#: regression iff tot > REL × golden + ABS_US
REL = 1.005
ABS_US = 0.5
#: cases whose golden time is under this are ignored
MIN_GOLDEN_US = 4.0

#: re-measuring's budget (verdict/remeasure.Budget, ``--remeasure-reps`` / ``--remeasure-time``): at most this
#: many reps per case beyond the stability rule's, and passes until they took this share of the run's wall time
EXTRA_REPS = 12
SHARE = 0.3
