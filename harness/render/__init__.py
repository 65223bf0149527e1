"""A comparison for people: the terminal (terminal.py), the PR comment (markdown.py), in one vocabulary
(vocabulary.py: how each verdict looks, how a case is named; envinfo.py: how an environment is summarized); and
the HTML every page shares (html.py)."""
