"""The certified branch and bound for pair queries of ReLU networks.

HiGHS solves the node LPs that :mod:`fairspec.certify.pairlp` builds (one ``Highs`` object per
query, bounds and the triangle coefficients changed per node, so each solve warm-starts from the
previous basis); its duals are handed to certify as the multipliers of each leaf, and certify
(:class:`fairspec.certify.pairlp.TreeBuilder`) checks every leaf as the tree grows. The solver's
word is never the proof: a leaf whose multipliers do not certify it is split further.

    prove_below(problem, threshold, strict, deadline) -> BabResult
        status "proved" (proof: a bab-certificate that the measure is < / <= threshold for every
        pair), "candidate" (pair: a pair whose LP point breaks the claim; the caller replays it on
        the model's runtime), "timeout" or "gave-up" (reason).
    upper_bound(problem, deadline) -> (bound, proof | None)
        a certified upper bound on the problem's maximal violation measure.
    certify_holds(problem, runtime_net, deadline, encoding=, readout=, precision=, eps_strict=)
        the runtime error bound E, the claim moved outward by E, then prove_below.

The measure is :mod:`fairspec.backends.pair`'s directional one: ``min(z, -z')`` (label),
``z - z'`` (logit), ``sigmoid(z) - sigmoid(z')`` (prob), over the real-arithmetic network
``problem.net``; thresholds moved by the runtime's error (``fairspec.certify.network``) are the
caller's. ``deadline`` is a ``time.monotonic()`` instant.
"""

from fairspec.backends.bab.engine import BabResult, maximize, prove_below, upper_bound
from fairspec.backends.bab.holds import certify_holds

__all__ = ["BabResult", "prove_below", "upper_bound", "maximize", "certify_holds"]
