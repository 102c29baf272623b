"""Renderers: the same Report as console text, JSON, and (later) CI formats."""
