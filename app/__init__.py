"""Sotto's desktop app (PySide6). Only this package imports Qt; it drives ``core``."""
