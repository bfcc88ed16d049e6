"""What both programs share that needs only the standard library: errors, paths,
redaction, the API envelope, state machines, filters."""
