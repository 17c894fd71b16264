"""The catalogue of real DP libraries' mechanisms, configured as their documentation says, that
``benchmarks/library_audit.py`` audits (``docs/library_audits.md``); importable by the CLI as
``dpaudit.mechanisms.catalogue.<module>:<name>``.

* :mod:`~dpaudit.mechanisms.catalogue.diffprivlib_mechanisms` and
  :mod:`~dpaudit.mechanisms.catalogue.diffprivlib_tools`: IBM diffprivlib's mechanisms and tools;
* :mod:`~dpaudit.mechanisms.catalogue.opendp_measurements`: every OpenDP measurement constructor;
* :mod:`~dpaudit.mechanisms.catalogue.pipelinedp_metrics`: every PipelineDP metric;
* :mod:`~dpaudit.mechanisms.catalogue.planted`: the same mechanisms with a planted leak (their noise
  scaled by 0.7), to measure an audit's power next to each pass.

Each needs its library (``pip install 'dpaudit[diffprivlib]'`` etc.); importing a module does not
import the library, the first sample does. The old paths ``dpaudit.examples.<module>`` still work:
they are the same module objects.
"""
