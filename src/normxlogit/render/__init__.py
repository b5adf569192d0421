"""Renderers: rich terminal output and standalone HTML heatmaps."""

from .html import render_html
from .terminal import render_rich

__all__ = ["render_html", "render_rich"]
