"""`harness publish`: a comparison as a sticky PR comment or in a Google spreadsheet."""

from __future__ import annotations

from typing import Annotated

import typer

from harness.cli.options import CompareCsv
from harness.errors import HarnessError

app = typer.Typer(help="Publish a comparison: a sticky PR comment, a Google spreadsheet.", no_args_is_help=False)


@app.command("github")
def publish_github(
    compare_csv: CompareCsv,
    repo: Annotated[str, typer.Option(help="OWNER/NAME")],
    pr: Annotated[int, typer.Option(min=1, help="pull request number")],
    token_env: Annotated[str, typer.Option(help="environment variable holding the token")] = "GITHUB_TOKEN",
    api_url: Annotated[
        str, typer.Option(help="GitHub API root (GHES: https://HOST/api/v3)")
    ] = "https://api.github.com",
    artifact: Annotated[
        str, typer.Option(help="where the full tables are (named if the comment is cut)")
    ] = "the run's artifacts",
    explain_url: Annotated[
        str, typer.Option(help="link to `harness explain` output (compiled-kernel diffs of the regressions)")
    ] = "",
) -> None:
    """Create or update the one comment on PR that carries the comparison (found by its hidden marker)."""
    import os

    from harness.compare.store import load_compare
    from harness.publish.github import GitHub, check_api_url, check_repo
    from harness.render.markdown import render_markdown

    check_repo(repo)
    check_api_url(api_url)
    if pr < 1:
        raise HarnessError(f"--pr {pr}: expected a pull request number (1 or more)")
    token = os.environ.get(token_env, "")
    if not token:
        raise HarnessError(f"${token_env} is empty: give a token with pull-requests: write")
    body = render_markdown(load_compare(compare_csv), artifact=artifact, explain_url=explain_url)
    action, cid = GitHub(repo=repo, token=token, api_url=api_url).upsert_comment(pr, body)
    print(f"{action} comment {cid} on {repo}#{pr}")


@app.command("sheets")
def publish_sheets(
    compare_csv: CompareCsv,
    spreadsheet: Annotated[str, typer.Option(help="the spreadsheet's ID or URL (shared with the service account)")],
    title: Annotated[
        str, typer.Option(help="worksheets are 'TITLE · summary' and 'TITLE · cases'; others are left alone")
    ] = "harness",
    credentials: Annotated[
        str | None,
        typer.Option(
            help="service-account key file; default: $HARNESS_SHEETS_CREDENTIALS, then "
            "$GOOGLE_APPLICATION_CREDENTIALS (a path or the JSON itself)"
        ),
    ] = None,
) -> None:
    """Replace this title's summary and cases worksheets in a Google spreadsheet with the comparison."""
    from harness.compare.store import load_compare
    from harness.publish.sheets import publish_sheets as publish

    url = publish(load_compare(compare_csv), spreadsheet, title=title, credentials=credentials)
    print(f"published '{title} · summary' and '{title} · cases' to {url}")
