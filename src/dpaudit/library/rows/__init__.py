"""The rows of the library-audit table, one module per library.

Each module defines ``LIBRARY`` (:class:`~dpaudit.library.entry.LibraryInfo`), ``ENTRIES`` (its
rows, in table order), and the data the table states with them: ``NOTE`` (printed under the
library's heading), ``LEFT_OUT`` (what has no row, and why), ``RECORD`` (each finding against the
published record and the trackers), ``ADVERSARIAL_RECORD``, ``ADVERSARIAL_SAME_CAUSE``,
``POWER_NOTES``, ``FLOAT_CAUSES``; optionally ``relation_note(entry)`` and ``float_cause(entry)``.
:mod:`dpaudit.library.registry` assembles them.
"""
