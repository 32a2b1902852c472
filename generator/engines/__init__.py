"""Pure arithmetic: memory, deployment, sizing, training and speed. No files, no templates, no formatting."""
