"""`plylog schemas export DIR`: the wire contract as JSON Schema."""
from __future__ import annotations

from pathlib import Path

import typer

schemas_app = typer.Typer(help="The wire contract (CONTRACT.md) as JSON Schema, for integrators.", no_args_is_help=True)


@schemas_app.command("export")
def export(directory: Path = typer.Argument(Path("schemas/json"), help="Where to write the files.")) -> None:
    """Write JSON Schema for every record, and per game its options, actions and events."""
    from schemas.export import export_json_schemas

    written = export_json_schemas(directory)
    typer.echo(f"wrote {len(written)} schema files under {directory}")


def register(app: typer.Typer) -> None:
    app.add_typer(schemas_app, name="schemas")
