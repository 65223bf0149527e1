"""The driver's side of measuring: cases sent to worker processes in each environment (runner.py, workers.py),
their reps journaled and judged by the stability rule (stability.py), rows and sidecars written (cases.py,
sidecar.py), outputs locked (locks.py), several environments interleaved (interleave.py);
what a suite would run, without running it (suiteview.py: `harness suite show`)."""
