"""`plylog schemas export`: the wire contract as JSON Schema files and an AsyncAPI 3.0 document."""

from __future__ import annotations

from pathlib import Path

import typer

schemas_app = typer.Typer(
    help="The wire contract (docs/contract.md) as JSON Schema and AsyncAPI, for integrators.", no_args_is_help=True
)


@schemas_app.command("export")
def export(
    directory: Path = typer.Argument(Path("schemas/json"), help="Where to write the JSON Schema files."),
    asyncapi: Path = typer.Option(
        Path("schemas/asyncapi.yaml"), "--asyncapi", help="Where to write the AsyncAPI 3.0 document."
    ),
) -> None:
    """Write JSON Schema (draft 2020-12) for every record, and per game its options, actions, events
    and view; and the AsyncAPI 3.0 document of the topics, with examples from real folds.

    Idempotent: a file that already holds what the models give is left alone. Run it from the
    repository root after changing a model in `schemas/` (a test fails until the files agree).
    """
    from schemas.export import export_json_schemas, write_if_changed
    from services.cli.contract_doc import asyncapi_yaml

    written, unchanged = export_json_schemas(directory)
    document_written = write_if_changed(asyncapi, asyncapi_yaml())
    typer.echo(f"{directory}: {len(written)} schema files written, {len(unchanged)} already up to date")
    typer.echo(f"{asyncapi}: {'written' if document_written else 'already up to date'}")


def register(app: typer.Typer) -> None:
    app.add_typer(schemas_app, name="schemas")
