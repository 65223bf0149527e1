"""Publishing a comparison: a sticky PR comment (github.py) and a Google spreadsheet (sheets.py)."""
