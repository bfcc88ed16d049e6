"""Server definitions: atoms, agents.json, their schema, `$VAR` expansion and atomic writes."""
