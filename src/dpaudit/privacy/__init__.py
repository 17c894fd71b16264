"""What a mechanism promises, written once: claims, analytic privacy profiles, trade-off functions
and the conversions between them.

* :mod:`dpaudit.privacy.claims` — :class:`PureDP`, :class:`ApproxDP`, :class:`RenyiDP` (the
  guarantee a tester checks; each gives its privacy profile ``delta(eps')``);
* :mod:`dpaudit.privacy.profiles` — exact privacy profiles, trade-off functions and Gaussian-DP
  conversions of the Gaussian, Laplace and Poisson-subsampled Gaussian mechanisms, and the
  profile -> trade-off / epsilon / GDP conversions (paper 001 §2, Lemma 7); each profile converts
  from and to dp_accounting's ``DpEvent`` (``from_event`` / ``to_event``);
* :mod:`dpaudit.privacy.events` — dp_accounting's ``DpEvent`` as the value object of a mechanism
  and its compositions: flattening into runs, and the one builder of dp_accounting privacy loss
  distributions (``pld_from_event``) that the accountants use;
* :mod:`dpaudit.privacy.rdp` — the RDP -> DP conversion (Canonne, Kamath & Steinke 2020) that
  the RDP claim and the accountants' RDP bounds share;
* :mod:`dpaudit.privacy.conversions` — the caps a claim implies for the testers (total variation,
  Rényi divergence) and their inverses.

This package sits below every family (testers, score audits, accounting): it imports nothing
from them.
"""

from .claims import ApproxDP, Claim, PureDP, RenyiDP, claim_from_dict, make_claim

__all__ = ["ApproxDP", "Claim", "PureDP", "RenyiDP", "claim_from_dict", "make_claim"]
