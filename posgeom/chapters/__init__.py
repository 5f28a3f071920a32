"""What each chapter reports, one module per chapter (named after it): its stored results read back as
typed records, the numbers its prose quotes as one frozen dataclass per section (glued by
:func:`posgeom.notebooks.glue_fields` from a hidden cell), the tables it shows, and its "Paper vs this
book" rows, each decided by a rule of :mod:`posgeom.verdicts`.

These modules only read what :mod:`posgeom.experiments` stored; no experiment imports them. Changing how a
chapter reports therefore never changes a code key, and the committed paper-scale results stay fresh.
"""
