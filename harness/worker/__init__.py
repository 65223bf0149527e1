"""The worker package: what runs inside each environment's Python (main.py, run by path).

Standard library, torch, triton and the kernels only: never pandas, yaml, rich or the rest of harness, so that
any environment that can run the kernels can measure them (tests/worker/test_imports.py enforces it).
"""
