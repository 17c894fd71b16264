"""Ready-made mechanisms to audit, importable by the CLI as ``dpaudit.examples.<module>:<name>``.

* :mod:`dpaudit.examples.diffprivlib_mean`: IBM diffprivlib's mean, used correctly (``dpl_mean``)
  and with data-dependent bounds (``broken_mean``); needs ``pip install 'dpaudit[diffprivlib]'``.
* :mod:`dpaudit.examples.per_call`: plain functions called once per output, cheap
  (``noisy_sum``), costly (``slow_noisy_sum``) and raising (``broken_sum``), for trying
  ``--processes``.

The library-audit targets (diffprivlib, OpenDP and PipelineDP configured as documented) moved to
:mod:`dpaudit.mechanisms.catalogue`; ``dpaudit.examples.diffprivlib_mechanisms``,
``diffprivlib_tools``, ``opendp_measurements`` and ``pipelinedp_metrics`` remain as aliases of
those modules.
"""
