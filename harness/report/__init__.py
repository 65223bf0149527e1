"""`harness report`: results and a comparison → one self-contained HTML page (report.py), from checked data
(data.py), figures (plots.py), ceilings (peaks.py) and HTML helpers (page.py)."""
