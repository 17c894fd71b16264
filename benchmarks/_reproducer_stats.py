"""The statistics every generated reproducer carries (text, not imported by the scripts): a
Chernoff-KL confidence bound on a binomial proportion and the loop that counts outputs in the set.

Shared by ``benchmarks/library_reproducers.py`` and ``benchmarks/input_space_reproducers.py`` so that
the standalone scripts they write (the library and NumPy only) certify their sets the same way.
"""

STATS_FUNCTIONS = '''def kl(a, b):
    a = min(max(a, 0.0), 1.0)
    out = 0.0
    if a > 0:
        out += a * math.log(a / b)
    if a < 1:
        out += (1 - a) * math.log((1 - a) / (1 - b))
    return out


def upper(k, n, beta):
    """Chernoff-KL upper confidence bound on a binomial proportion (holds with prob. >= 1 - beta)."""
    if k == n:
        return 1.0
    lo, hi = k / n, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if n * kl(k / n, mid) <= math.log(1 / beta) else (lo, mid)
    return hi


def lower(k, n, beta):
    """Chernoff-KL lower confidence bound on a binomial proportion."""
    return 1.0 - upper(n - k, n, beta)


def count(data, first_seed):
    hits = 0
    for i in range(N):
        y = np.atleast_1d(np.asarray(release(data, first_seed + i), dtype=float)).ravel()
        hits += bool(in_set(y))
    return hits
'''
