"""The reason of a partitioned run that leaves partitions undecided, read once.

Each undecided partition has its own reason, and most say the same thing with other numbers ("the
certified branch and bound did not decide it in 2.1 s (time limit)", "... in 2.3 s ..."). The
partitions' reason was ``"3 of 8 partitions undecided (A (x); A' (y); B)"``: the same phrase two or
three times, parentheses inside parentheses, and past three reasons the rest dropped. Here the
reasons that differ only in their numbers are one phrase, each varying number its range, with how
many partitions it concerns, every kind of reason kept:

    3 of 8 partitions undecided: in 2, the certified branch and bound did not decide it in 2.1 to
    2.3 s (time limit); in 1, the total time budget was spent before this partition
"""

from __future__ import annotations

import re
from collections import Counter

# a number standing alone (not the 32 of float32, not a digit of a name); a unit may follow (2.5s)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\d.]\d)")
_SHOWN = 6   # kinds of reason listed in full; the rest are counted


def undecided_reason(undecided: int, parts: int, reasons) -> str:
    """``undecided`` of ``parts`` partitions undecided, then each kind of reason once (``reasons``:
    one per undecided partition that has one, duplicates included: their count is the partitions')."""
    head = f"{undecided} of {parts} partitions undecided"
    groups: dict[str, list[str]] = {}
    for r in reasons:
        if r:
            groups.setdefault(_NUMBER.sub("\0", r), []).append(r)
    if not groups:
        return head
    counts = Counter({k: len(v) for k, v in groups.items()})
    ordered = sorted(groups, key=lambda k: (-counts[k], k))
    if len(ordered) == 1 and counts[ordered[0]] == undecided:
        return f"{head}: {_phrase(ordered[0], groups[ordered[0]])}" if undecided == 1 else \
            f"{head}, each: {_phrase(ordered[0], groups[ordered[0]])}"
    shown = [f"in {counts[k]}, {_phrase(k, groups[k])}" for k in ordered[:_SHOWN]]
    rest = sum(counts[k] for k in ordered[_SHOWN:])
    if rest:
        shown.append(f"in {rest} more, {len(ordered) - _SHOWN} other reason{'s' * (len(ordered) - _SHOWN > 1)}")
    return f"{head}: " + "; ".join(shown)


def _phrase(template: str, texts: list[str]) -> str:
    """The texts' one phrase: each number that differs between them as its range (``2.1 to 2.3``),
    an index (a whole number) as the few it takes (``2, 5, 7``)."""
    columns = list(zip(*(_NUMBER.findall(t) for t in texts)))
    out = template
    for col in columns:
        values = sorted(set(col), key=float)
        if len(values) == 1:
            shown = values[0]
        elif all(re.fullmatch(r"\d+", v) for v in values) and len(values) <= 4:
            shown = ", ".join(values)
        else:
            shown = f"{values[0]} to {values[-1]}"
        out = out.replace("\0", shown, 1)
    return out
