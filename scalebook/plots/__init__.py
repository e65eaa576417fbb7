"""Figures for the book, drawn with matplotlib (imported on first use, never at package import).

One submodule per chapter topic; every function returns the matplotlib `Figure` it drew and
takes an optional `ax` to draw into.
"""
from __future__ import annotations
