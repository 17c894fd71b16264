"""IBM diffprivlib's mean, used correctly and used wrongly: two mechanisms to audit.

Run from the command line (exit code 1 when a violation is found)::

    dpaudit test dpaudit.mechanisms.catalogue.diffprivlib_mean:dpl_mean --epsilon 1      # exit 0
    dpaudit test dpaudit.mechanisms.catalogue.diffprivlib_mean:broken_mean --epsilon 1   # exit 1

Both objects carry their neighbouring relation (replace-one over [0, 1], 1 to 10 records) and
``WITNESS_PAIRS`` as audit hints, so no further options are needed.

Both need diffprivlib (``pip install 'dpaudit[diffprivlib]'``); importing this module does not
import it, the first sample does.

Which adjacency diffprivlib's mean protects
-------------------------------------------
``diffprivlib.tools.mean`` (diffprivlib 0.6.6, ``diffprivlib/tools/utils.py``, function ``_mean``)
clips the data to the bounds, takes the exact mean over the *true* number of records, and adds
truncated Laplace noise scaled to ``(upper - lower) / n``::

    array = clip_to_bounds(np.ravel(array), bounds)
    ...
    actual_mean = _func(array, axis=axis, dtype=dtype, keepdims=keepdims)
    mech = LaplaceTruncated(epsilon=epsilon, delta=0, sensitivity=(upper - lower) / array.size,
                            lower=lower, upper=upper, random_state=random_state)
    output = mech.randomise(actual_mean)

``(upper - lower) / n`` is the sensitivity of the mean when one record is *replaced* and ``n`` is
public (bounded DP); truncating to ``[lower, upper]`` is post-processing. So the tool is
eps-DP under **replace-one** adjacency, and this module declares ``NEIGHBOURING = "replace"``.
Under add/remove it is not eps-DP: ``n`` itself is private and sets the noise scale, the bug of
``zoo:non-dp-laplace-1``. At ``[[1.0]]`` vs ``[[1.0], [0.0]]`` with eps = 1 its outputs (Laplace
truncated to [0, 1], scales 1 vs 1/2) have ``H_{e^1} = 0.021`` (exact integration), so an
add/remove audit of ``dpl_mean`` rightly reports a violation.

The broken wrapper
------------------
``broken_mean`` calls the same tool but leaves out ``bounds`` — "diffprivlib works them out".
diffprivlib then uses ``bounds = (np.nanmin(array), np.nanmax(array))`` taken from the private
data (``_mean``, right at the top) and warns with a ``PrivacyLeakWarning`` that is easy to
filter away or never see in a service log. Writing ``bounds=(x.min(), x.max())`` by hand is the
same bug. The noise then scales with the data's own range and the output is truncated to it:

* with one record the range is empty, the noise is zero and the "private" mean *is* the record:
  ``[[0.0]]`` vs ``[[1.0]]`` gives outputs 0 and 1 with certainty, ``H_{e^eps} = 1`` in both
  directions, for every eps;
* ``[[0.0], [0.0]]`` always gives 0 while ``[[0.0], [1.0]]`` gives 0 only with probability
  ``exp(-1)/2 = 0.184`` at eps = 1: ``H_{e^1} = 0.816`` (D1||D0) and ``0.5`` (D0||D1).

Any replace pair that changes the minimum or maximum shows it; the two pairs above are in
``WITNESS_PAIRS``. For ``dpl_mean`` the same pairs are where a wrong calibration would show:
at ``[[0.0]]`` vs ``[[1.0]]`` its privacy loss reaches exactly eps (the atoms at 0 have
probabilities 1/2 and ``exp(-1)/2``), and ``H_{e^1} = 0``.

Note for estimators: ``broken_mean`` on ``[[0.0]]`` returns the constant 0 (zero variance).
"""

from __future__ import annotations

from ...datasets import Domain, Replace
from ..adapters.diffprivlib import DiffprivlibMechanism

__all__ = [
    "BOUNDS",
    "EPSILON",
    "NEIGHBOURING",
    "WITNESS_PAIRS",
    "broken_mean",
    "dpl_mean",
    "leaky_mean",
    "private_mean",
]

EPSILON = 1.0
"""Privacy parameter both mechanisms are built with and claim (pure DP, nats)."""

BOUNDS = (0.0, 1.0)
"""Record domain: scalar records in [0, 1]."""

NEIGHBOURING = "replace"
"""The adjacency diffprivlib's mean is private under (one record replaced, n public)."""

WITNESS_PAIRS = (
    ([[0.0]], [[1.0]]),
    ([[0.0], [0.0]], [[0.0], [1.0]]),
)
"""Replace-one pairs where ``broken_mean`` fails (H = 1 and 0.816 at eps = 1) and ``dpl_mean`` is tight."""


def private_mean(x, random_state=None, accountant=None):
    """diffprivlib's eps-DP mean with public bounds (0, 1): ``mean(x, epsilon=1.0, bounds=(0, 1))``.

    Parameters
    ----------
    x : ndarray, shape (n,)
        Records in [0, 1].
    random_state, accountant
        Passed to ``diffprivlib.tools.mean`` (set by :class:`DiffprivlibMechanism`).

    Returns
    -------
    float
        The noisy mean, in [0, 1].
    """
    from diffprivlib.tools import mean  # noqa: PLC0415  (optional dependency)

    return mean(x, epsilon=EPSILON, bounds=BOUNDS, random_state=random_state, accountant=accountant)


def leaky_mean(x, random_state=None, accountant=None):
    """BROKEN on purpose: diffprivlib's mean without ``bounds``, so they come from the data.

    diffprivlib substitutes ``(min(x), max(x))`` for the missing bounds: the noise scale and the
    truncation interval depend on the private data. With one record the output is the record.
    """
    from diffprivlib.tools import mean  # noqa: PLC0415  (optional dependency)

    return mean(x, epsilon=EPSILON, random_state=random_state, accountant=accountant)


dpl_mean = DiffprivlibMechanism(private_mean, name="diffprivlib_mean:dpl_mean")
"""``diffprivlib.tools.mean(x, epsilon=1.0, bounds=(0, 1))``: 1-DP under replace-one; not flagged."""

broken_mean = DiffprivlibMechanism(leaky_mean, name="diffprivlib_mean:broken_mean")
"""diffprivlib's mean with data-dependent bounds: claims 1-DP, is not DP at all (H = 1 at a witness)."""

for _mechanism in (dpl_mean, broken_mean):
    _mechanism.neighbouring = Replace(Domain((BOUNDS[0],), (BOUNDS[1],)), min_size=1, max_size=10)
    _mechanism.witness_pairs = WITNESS_PAIRS
