"""Pipeline stages: capture, bulk generation, training-data export, GPU stages.

Each builds on ``pipeline.core``; the gated ones check a gate record before any
request, file or command. Nothing here decides a verdict.
"""
