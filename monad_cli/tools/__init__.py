"""A tool's `inputSchema`, for both programs: arguments checked against it (JSON Schema,
with `jsonschema`) and its local `$ref`s resolved."""
