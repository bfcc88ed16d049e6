"""Trust controls for tool calls: exposed names, tool-set pins, the approval gate."""
