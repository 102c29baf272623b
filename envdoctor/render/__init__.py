"""Renderers: the same Report as console text, JSON, Markdown and CI formats (table: registry.py)."""
