"""The only code that touches the output folder."""
