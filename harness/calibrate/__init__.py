"""`harness calibrate`: how small a slowdown each case can tell from noise (A/A plus injected known slowdowns)."""
