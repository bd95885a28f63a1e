"""Guests as LAVA jobs: lava-run on this machine, or a lab."""
