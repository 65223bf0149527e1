"""`harness report`: results and a comparison → one self-contained HTML page (report.py), from checked data
(data.py), figures (plots.py) and ceilings (peaks.py); the HTML helpers it shares with retune are in
harness/render/html.py."""
