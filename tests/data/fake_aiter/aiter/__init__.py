# AITER's package __init__ imports its JIT-built C++ ops; this stand-in fails the same way when imported.
raise ImportError("aiter's C++ extensions are not built (stand-in for AITER's aiter/__init__.py)")
