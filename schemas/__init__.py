"""The plylog wire contract (version 1) as pydantic v2 models.

This package imports nothing of plylog's own: it is the contract that producers and
consumers in any language share. `export_json_schemas` writes it as JSON Schema.
"""
