"""What each chapter reports, one module per chapter: its stored results read back as typed records, the
numbers its prose quotes (glued by :func:`posgeom.notebooks.glue_fields`), its tables and its "Paper vs this book"
rows, each decided by a rule of :mod:`posgeom.verdicts`. No experiment imports them, so they are in no code key."""
