"""One module per command group; only app.py imports them."""
