"""Reports: `core` (the report object and the exit-code rule), the formats by
name (`formats`: text, json, junit) and the JSON Schema (`schema`). This package imports
nothing by itself, so the CLI pays only for the format it renders."""
