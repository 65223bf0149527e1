"""What a verdict is, pure and below both the stages that measure (run/) and that compare (compare/): the rule and
its parameters (rule.py, defaults.py), the reps' statistics (reps.py), confidence and the between-process spread
(confidence.py, process_noise.py, confirm.py), the referee a re-measuring run is given (referee.py), the stability
rule (stability.py), the multi-GPU guard (groupcheck.py), the re-measuring policy (remeasure.py) and a
calibration's resolving power (resolution.py). No I/O: rows and arrays in, verdicts out. A rule of another shape
is a change to this package and its tests."""
