"""`harness explain`: why a case got slower, from the compiled kernels both stacks produced (resources, occupancy,
instruction mix, layouts, the assembly diff)."""
