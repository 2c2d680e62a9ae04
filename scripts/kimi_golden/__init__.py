"""Pieces and builders behind scripts/make_kimi_golden.py (constructed Kimi K2.5 golden data)."""
