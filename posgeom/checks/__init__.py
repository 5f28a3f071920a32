"""Self-check functions for the chapters' coding exercises, one module per chapter group.

Each ``check_*`` function runs a student's answer against the reference implementation in
posgeom, prints a clear verdict (and what differs when it is wrong) and returns ``True``/``False``.
"""
