"""What each command does: build, check, serve, estimate, models add, prices import and diff."""
