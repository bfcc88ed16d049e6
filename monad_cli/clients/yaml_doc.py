"""Other clients' YAML files (Goose's `config.yaml`, Aura's MCP files), through ruamel.yaml,
the one YAML library monad uses (imported when a YAML file is read or written).

`load` reads as those clients do: YAML 1.2 (Goose's serde_yaml and Aura's Go decoder: `yes`
is a string, not a bool), plain data, and a key twice in one map refused (ruamel.yaml's own
`DuplicateKeyError`, as Aura's strict decoder). `dump` writes plain data in the block style
those clients write; `round_trip` is the editor that keeps a file's comments, key order and
quoting (`connect` on Goose's file).
"""

from __future__ import annotations

import io
from typing import Any

from monad_cli.core.errors import ConfigError


def load(text: str, source: str) -> Any:
    """The YAML document of `text` as plain data (None when empty). Raises `ConfigError`
    naming `source:line:column` and what is wrong."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    # pure: the C loader does not check duplicate keys; these files are small
    try:
        return YAML(typ="safe", pure=True).load(text)
    except MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        raise ConfigError(f"`{where}`: malformed YAML: {e.problem or e.context}; fix the file "
                          f"(nothing was written)", file=source) from None
    except YAMLError as e:
        raise ConfigError(f"`{source}`: malformed YAML: {e}; fix the file (nothing was written)",
                          file=source) from None


def _layout(yaml: Any) -> Any:
    yaml.default_flow_style = False
    yaml.allow_unicode = True
    yaml.width = 4096  # long values stay on one line, as the clients write them
    yaml.indent(mapping=2, sequence=2, offset=0)  # `- item` flush under its key
    return yaml


def dump(data: Any) -> str:
    """`data` (plain dicts, lists, scalars) as block-style YAML, keys in their order."""
    from ruamel.yaml import YAML

    yaml = _layout(YAML(typ="safe", pure=True))
    yaml.sort_base_mapping_type_on_output = False
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def round_trip() -> Any:
    """ruamel.yaml's round-trip YAML (keeps comments, order and quoting), laid out as `dump`."""
    from ruamel.yaml import YAML

    yaml = _layout(YAML())
    yaml.preserve_quotes = True
    yaml.representer.add_representer(type(None), lambda r, _: r.represent_scalar("tag:yaml.org,2002:null", "null"))
    return yaml


__all__ = ["dump", "load", "round_trip"]
