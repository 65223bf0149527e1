"""What a run is asked to measure: suites (suite.py) of cases of kernels (kernel.py reads each kernel's SPEC
without importing it). Everything here is checked before anything runs. The environments a suite runs under have
their own package: harness/envs/."""
