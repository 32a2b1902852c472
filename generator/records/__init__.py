"""Typed records passed between the stages: what the catalogs describe and the engines' constants."""
