"""Sample code, importable by the CLI as ``dpaudit.examples.<module>:<name>``.

* :mod:`dpaudit.examples.per_call`: plain functions called once per output, cheap
  (``noisy_sum``), costly (``slow_noisy_sum``) and raising (``broken_sum``), for trying
  ``--processes``.

The library targets (diffprivlib, OpenDP, PipelineDP and Opacus configured as documented, used
correctly and with a planted mistake) moved to :mod:`dpaudit.mechanisms.catalogue`;
``dpaudit.examples.diffprivlib_mean``, ``diffprivlib_mechanisms``, ``diffprivlib_tools``,
``opacus_sgd``, ``opendp_measurements``, ``opendp_sum``, ``pipelinedp_daily`` and
``pipelinedp_metrics`` remain for a release as aliases of those modules (the same module objects).
"""
