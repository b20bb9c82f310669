"""The declared features a small-domain enumeration leaves out, said in its verdict (session 33).

kinds/pair_enumeration enumerates the features the model's encoding reads, the protected ones and those a further
pre-condition reads (``pair_space``): a declared feature none of them names -- the model never reads it, the pair
ties it (or keeps it within a tolerance) and no pre-condition reads it -- changes no pair's outputs, so the verdict
is the same for every value of it, and it is not enumerated. The verdict's "N-point domain" is then smaller than
the spec's domain; before, nothing said why. Here the verdict names those features (``details.not_enumerated``) and
its reason says so. Inside a relaxed run (kinds/pre_relax) a feature the original pre-condition reads is not one of
them: the relaxation's verdict is read back against it.

A tree model's enumeration (kinds/tree_pairs' binary posts, kinds/tree_outputs' class / prob(c) / logit(c) / value
cells; session 34) enumerates the encoded features (and those a pre-condition reads, which it requires encoded): the
same features are left out, and named the same way. (A protected feature the model does not read is FS403.)"""

from __future__ import annotations

import math
from dataclasses import replace

from fairspec import ir


def not_enumerated(prop: ir.IndividualFairness, fs: ir.FeatureSet, enc: ir.Encoding) -> list:
    """The declared features of ``fs`` the enumeration of ``prop`` leaves out, in declaration order."""
    from fairspec.kinds.pair_pre import pre_features
    from fairspec.kinds.pre_relax import original

    read = {c.feature for c in enc.columns} | set(prop.free) | set(pre_features(prop))
    read |= set(pre_features(original(prop)))
    return [f for f in fs.features if f.name not in read]


def with_not_enumerated(v, prop: ir.IndividualFairness, ctx):
    """``v`` (the enumeration's verdict, or None) naming the declared features it left out."""
    if v is None:
        return v
    fs = ctx.spec.feature_set(prop.features)
    left = not_enumerated(prop, fs, ctx.encoding(prop.model))
    if not left:
        return v
    sizes = [math.inf if isinstance(f.domain, ir.RealRange) else len(f.values()) for f in left]
    names = ", ".join(f.name for f in left)
    how = "ties" if all(f.name not in dict(prop.relaxed) for f in left) else "ties or keeps within its tolerance"
    said = (f"{'the feature' if len(left) == 1 else 'the features'} {names}, which the model does not read and the "
            f"pair {how}, {'is' if len(left) == 1 else 'are'} not enumerated: the domain counted is that of the "
            f"others (the spec's is {'larger' if math.inf in sizes else f'{math.prod(sizes):,} times as large'}) and "
            "the verdict is the same for every value of "
            f"{'it' if len(left) == 1 else 'them'}")
    details = {**(v.details or {}), "not_enumerated": [f.name for f in left]}
    return replace(v, details=details, reason=f"{v.reason}; {said}" if v.reason else said)
