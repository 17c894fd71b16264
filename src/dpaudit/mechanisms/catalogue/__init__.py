"""The catalogue of real DP libraries' mechanisms, configured as their documentation says, that
``benchmarks/library_audit.py`` audits (``docs/library_audits.md``); importable by the CLI as
``dpaudit.mechanisms.catalogue.<module>:<name>``.

* :mod:`~dpaudit.mechanisms.catalogue.diffprivlib_mechanisms` and
  :mod:`~dpaudit.mechanisms.catalogue.diffprivlib_tools`: IBM diffprivlib's mechanisms and tools;
* :mod:`~dpaudit.mechanisms.catalogue.opendp_measurements`: every OpenDP measurement constructor;
* :mod:`~dpaudit.mechanisms.catalogue.pipelinedp_metrics`: every PipelineDP metric;
* :mod:`~dpaudit.mechanisms.catalogue.diffprivlib_record`: diffprivlib's LinearRegression and
  LogisticRegression at the two diffprivlib violations of the Re:cord-play record (PoPETs 2026);
* :mod:`~dpaudit.mechanisms.catalogue.opacus_optimizers`: Opacus's DPOptimizer (flat, secure mode) and
  DPPerLayerOptimizer, one full-batch step each;
* :mod:`~dpaudit.mechanisms.catalogue.diffprivlib_models` (diffprivlib's models through their fitted
  parameters), :mod:`~dpaudit.mechanisms.catalogue.pipelinedp_noise` (PipelineDP's ``add_dp_noise``) and
  :mod:`~dpaudit.mechanisms.catalogue.opendp_polars` (OpenDP's Polars API);
* :mod:`~dpaudit.mechanisms.catalogue.planted`: the same mechanisms with a planted leak (their noise
  scaled by 0.7), to measure an audit's power next to each pass.

and single targets, each used as documented and with a mistake that an audit finds:

* :mod:`~dpaudit.mechanisms.catalogue.diffprivlib_mean`: diffprivlib's mean (``dpl_mean``) and with
  data-dependent bounds (``broken_mean``);
* :mod:`~dpaudit.mechanisms.catalogue.opendp_sum`: an OpenDP sum (``dp_sum``) and one with a wrong
  ``d_in`` (``wrong_d_in_sum``);
* :mod:`~dpaudit.mechanisms.catalogue.pipelinedp_daily`: PipelineDP per-day sums with user-level
  (``daily_sum``) and user-day (``user_day_sum``) privacy units;
* :mod:`~dpaudit.mechanisms.catalogue.opacus_sgd`: one Opacus DP-SGD step (``dp_sgd_step``) and one
  with a stale noise multiplier (``stale_noise_step``), releasing parameters or a canary's loss.

Each needs its library (``pip install 'dpaudit[diffprivlib]'`` etc.); importing a module does not
import the library, the first sample does. The old paths ``dpaudit.examples.<module>`` still work:
they are the same module objects.
"""
