"""Audits of real DP libraries (see ``docs/library_audits.md``).

* :mod:`dpaudit.library.envs`: each library in its own virtual environment, driven over a pipe by a
  worker process, as a :class:`~dpaudit.mechanisms.base.Mechanism` proxy
  (``dpaudit.library.envs.get_env("smartnoise-sql").mechanism("module:factory", **kwargs)``);
* ``dpaudit/library/targets/``: the worker-side target modules (they never import dpaudit).
"""
