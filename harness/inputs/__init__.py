"""What a run is asked to measure: suites (suite.py) of cases of kernels (kernel.py reads each kernel's SPEC
without importing it) under environments (env.py, envschema.py). Everything here is checked before anything runs."""
