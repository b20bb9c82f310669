"""A real feature in a narrow window (session 33): an ONNX ReLU network (float32) whose logit is steep in a real
feature ``rr`` (``rr : real in [0, 1]``, encoded raw: the runtime reads float32(rr)), over a protected category g
and an int f0; each property bounds ``rr`` (tied by the pair) to a window a few float32 steps wide, written with
non-dyadic constants (``require x.rr > 0.3``, ``require x'.rr <= 0.30000003``, ``x.rr + 0.1 >= 0.4``, ...), and a
label or logit post.

The truth is exact on the runtime: a real rr reaches the model as the float32 nearest the float64 it is written as,
so the window's float64 values reach a handful of float32 inputs (rounding is monotone: every float32 from the
first float64's to the last one's); the network is run on every (g, f0, that float32) and every admissible pair
(g differs, f0 and rr shared) is decided. Each constant is read as the float it is stored as and as the decimal it
is written as (README 'Further conditions'): the truth is that of both readings where they agree, else
``reading-dependent`` (only `unknown` is right). A witness must be a domain pair (rr in [0, 1], the same float64 on
both sides) meeting the window in both readings, and break the post on the runtime. The solvers reason about a
real input; where the window's float64 values round, as float32, out of the window (0.3 reaches the model as
0.30000001192092896), a proof about the reals of the window is not one about the runtime.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .core import Instance, Prop, Truth, decimal_text
from .networks import Net, run_onnx

FAMILY = "real-window"
CENTERS = ("0.1", "0.2", "0.3", "0.7", "0.6")
FLOAT, DECIMAL = 0, 1
_CMP = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def _read(text: str, reading: int) -> Fraction:
    v = float(text)
    return Fraction(v) if reading == FLOAT else Fraction(text)


def _ulp32(x: float) -> float:
    x32 = np.float32(x)
    return float(np.nextafter(x32, np.float32(np.inf)) - x32)


class Cond:
    """``lhs op c`` on rr: ``fn(r, reading)`` exact (Fractions)."""

    def __init__(self, text, fn):
        self.text, self.fn = text, fn


def _cond(rng, v: str, q: Fraction, lower: bool) -> Cond:
    """A bound of rr near q (below it when ``lower``), written one of four ways with non-dyadic constants."""
    op = str(rng.choice((">", ">=") if lower else ("<", "<=")))
    cmp = _CMP[op]
    c = _decimal(q)
    form = int(rng.choice([0, 0, 1, 2, 3]))
    if form == 0:
        return Cond(f"{v}.rr {op} {c}", lambda r, k, c=c: cmp(r, _read(c, k)))
    if form == 1:
        a = str(rng.choice(["0.1", "0.2", "0.3"]))
        s = _decimal(Fraction(c) + Fraction(a))
        return Cond(f"{v}.rr + {a} {op} {s}", lambda r, k, a=a, s=s: cmp(r + _read(a, k), _read(s, k)))
    if form == 2:
        s = _decimal(Fraction(c) / 10)
        return Cond(f"{v}.rr / 10 {op} {s}", lambda r, k, s=s: cmp(r / 10, _read(s, k)))
    a = str(rng.choice(["0.1", "0.3"]))
    s = _decimal(Fraction(c) * Fraction(a))
    return Cond(f"{v}.rr * {a} {op} {s}", lambda r, k, a=a, s=s: cmp(r * _read(a, k), _read(s, k)))


def _decimal(q: Fraction) -> str:
    """q rounded to 10 significant digits, as a decimal literal (a non-dyadic constant, most often)."""
    t = f"{float(q):.10g}"
    return decimal_text(Fraction(t)) or t


def _float_bounds(conds, reading):
    """The first and last float64 in [0, 1] meeting every condition in ``reading`` (None when none does), found
    by stepping from the nearest float of each condition's boundary (the conditions are monotone in r)."""
    def ok(x):
        r = Fraction(x)
        return 0 <= r <= 1 and all(c.fn(r, reading) for c in conds)

    lows, highs = [], []
    for c in conds:
        lows.append(_edge(c, reading, up=True))
        highs.append(_edge(c, reading, up=False))
    lo, hi = max([0.0] + [x for x in lows if x is not None]), min([1.0] + [x for x in highs if x is not None])
    # lo: the first float meeting the lower bounds; hi: the last meeting the upper bounds
    while lo <= hi and not ok(lo):
        lo = float(np.nextafter(lo, np.inf))
        if lo > hi:
            return None
    while hi >= lo and not ok(hi):
        hi = float(np.nextafter(hi, -np.inf))
    if lo > hi or not ok(lo) or not ok(hi):
        return None
    return lo, hi


def _edge(c: Cond, reading, up: bool):
    """For a lower bound (met above some value): the first float64 near its boundary that meets it; for an upper
    bound likewise the last; None when the condition is of the other kind."""
    probe_lo, probe_hi = c.fn(Fraction(0), reading), c.fn(Fraction(1), reading)
    if probe_lo == probe_hi:
        return None if probe_lo else (2.0 if up else -1.0)
    is_lower = probe_hi and not probe_lo            # met at 1, not at 0: r > boundary
    if is_lower != up:
        return None
    a, b = 0.0, 1.0                                  # bisection on floats: a fails / meets, b the other
    for _ in range(200):
        m = (a + b) / 2
        if m in (a, b):
            break
        if c.fn(Fraction(m), reading) == (not is_lower):
            a = m
        else:
            b = m
    x = b if is_lower else a
    for _ in range(8):                               # the first / last meeting it, exactly
        y = float(np.nextafter(x, -np.inf if is_lower else np.inf))
        if c.fn(Fraction(y), reading):
            x = y
        else:
            break
    return x


def _reached(bounds) -> list[float]:
    """Every float32 the window's float64 values round to (monotone rounding: the first's to the last's)."""
    if bounds is None:
        return []
    a, b = np.float32(bounds[0]), np.float32(bounds[1])
    out, x = [], a
    while x <= b:
        out.append(float(x))
        x = np.nextafter(x, np.float32(np.inf))
        if len(out) > 1000:
            raise RuntimeError(f"a window of more than 1,000 float32 values: {bounds}")
    return out


def _net(rng, center: float):
    """z = S rr + a g + d f0 + b (S steep, b putting the crossing near ``center``), through two ReLUs (h0 = relu(u),
    h1 = relu(-u), z = h0 - h1) and, half the time, a third neuron of g and f0 alone."""
    u32 = _ulp32(center)
    a = float(rng.choice([0.5, 1, 2, 3, 1.5]))
    d = float(rng.choice([0, 0.25, 1]))
    off = int(rng.integers(-4, 5))
    if rng.random() < 0.5:      # steep: a float32 step of rr moves the logit by about 1 to 5
        S = float(np.float32(rng.choice([1, 3, 5, 0.75]) / u32))
        b = float(np.float32(-S * (center + off * u32 / 2)))
    else:                       # gentle: the window moves it by far less than a; g decides, or a tie near 0
        S = float(rng.choice([2 ** 10, 3 * 2 ** 8, 2 ** 14, 1]))
        b = float(np.float32(-S * center - a * (off + 4) / 8))
    W0 = [[S, a, d], [-S, -a, -d]]
    b0 = [b, -b]
    W1 = [[1.0, -1.0]]
    if rng.random() < 0.5:
        W0.append([0.0, float(rng.choice([0.5, -0.5, 1])), float(rng.choice([0, 0.5]))])
        b0.append(0.0)
        W1 = [[1.0, -1.0, float(rng.choice([0.25, -0.25]))]]
    # inputs in the encode order: rr, g, f0 (rr first)
    return Net([np.array(W0, dtype=np.float64), np.array(W1, dtype=np.float64)],
               [np.array(b0, dtype=np.float64), np.zeros(1)], "logit1")


def generate(seed: int, n_props: int = 5) -> Instance:
    rng = np.random.default_rng([33, seed])
    cs = str(rng.choice(CENTERS))
    center = float(cs)
    net = _net(rng, center)
    blob = net.onnx_bytes("float32")
    spec = ("features F {\n  rr : real in [0, 1]\n  g : {A, B}  protected\n  f0 : int in [0, 2]\n}\n"
            'model m = onnx("m.onnx", output = "out", score = logit)\n'
            "encode F for m {\n  rr : raw\n  g : code\n  f0 : raw\n}\n")
    files = {"m.onnx": blob}
    info = {"center": cs, "weights": [w.tolist() for w in net.Ws], "biases": [b.tolist() for b in net.bs]}
    props = []
    u32 = _ulp32(center)
    for k in range(n_props):
        # a window a few float32 steps wide around the crossing (or beside it)
        mid = Fraction(center) + Fraction(int(rng.integers(-6, 7))) * Fraction(u32) / 2
        lo = mid - Fraction(int(rng.integers(0, 4))) * Fraction(u32) / 2 - Fraction(1, 10 ** 10)
        hi = mid + Fraction(int(rng.integers(0, 4))) * Fraction(u32) / 2 + Fraction(1, 10 ** 10)
        v1, v2 = ("x", "x'")[int(rng.integers(0, 2))], ("x", "x'")[int(rng.integers(0, 2))]
        conds = [_cond(rng, v1, lo, True), _cond(rng, v2, hi, False)]
        if rng.random() < 0.3:                         # the center's own constant, on its side: `x.rr > 0.3`
            i = int(rng.integers(0, 2))
            if (i == 0 and Fraction(cs) < hi) or (i == 1 and Fraction(cs) > lo):
                conds[i] = _cond(rng, (v1, v2)[i], Fraction(cs), i == 0)
        post = "label" if rng.random() < 0.6 else "logit"
        eps = op = None
        stats, reach = [], []
        for reading in (FLOAT, DECIMAL):
            fl = _reached(_float_bounds(conds, reading))
            reach.append(fl)
        allf = sorted(set(reach[0]) | set(reach[1]))
        Z = _scores(blob, allf)
        if post == "logit":
            diffs = [abs(Fraction(Z[(f, 1, f0)]) - Fraction(Z[(f, 0, f0)])) for f in allf for f0 in range(3)]
            op = "<=" if rng.random() < 0.6 else "<"
            if diffs and rng.random() < 0.6:
                eps = decimal_text(max(diffs)) or f"{float(max(diffs)):.6g}"
            else:
                eps = str(rng.choice(["0.5", "1", "2", "3"]))
            if op == "<" and Fraction(eps) == 0:
                op = "<="
        for fl in reach:
            stats.append(_status(Z, fl, post, op, eps))
        status = stats[0] if stats[0] == stats[1] else "reading-dependent"
        backend = str(rng.choice(["default", "default", "milp", "smt"]))
        mode = "find" if rng.random() < 0.25 else "prove"
        top = None
        if post == "logit" and seed >= MAXIMIZE_FROM and rng.random() < 0.3:
            # maximize: the largest |logit - logit'| over the pairs; judged where both readings reach the same inputs
            mode = "maximize"
            if reach[0] == reach[1] and reach[0]:
                top = max(abs(Fraction(Z[(f, 1, f0)]) - Fraction(Z[(f, 0, f0)])) for f in reach[0] for f0 in range(3))
        lines = ["forall x, x' : F", "require x.* == x'.* except {g}"] + [f"require {c.text}" for c in conds]
        lines.append("ensure label(m(x)) == label(m(x'))" if post == "label"
                     else f"ensure |logit(m(x)) - logit(m(x'))| {op} {eps}")
        if backend != "default":
            lines.append(f"using {backend}")
        if mode != "prove":
            lines.append(f"mode = {mode}")
        lines.append("timeout = 20s")
        name = f"w{k}"
        text = f"property {name} {{\n  " + "\n  ".join(lines) + "\n}"
        truth = Truth(status, check_witness=_checker(blob, conds, post, op, eps), domain=-1,
                      value=None if top is None else float(top), value_kind=None if top is None else "max", exact=top,
                      pairs=6 * max(len(reach[0]), len(reach[1])),
                      note=f"float32 inputs reached: float reading {[repr(x) for x in reach[0]]}, decimal reading "
                           f"{[repr(x) for x in reach[1]]}")
        meta = {"post": post, "op": op, "eps": eps, "backend": backend, "mode": mode, "runtime": "onnx",
                "dtype": "float32", "center": cs, "reached": [len(reach[0]), len(reach[1])],
                "window": [c.text for c in conds]}
        props.append(Prop(name, FAMILY, text, truth, meta, 20.0))
    if seed >= FREE_FROM:
        props.append(_free_prop(np.random.default_rng([33, seed, 1]), f"w{n_props}", blob, center))
    return Instance(FAMILY, seed, spec, files, props, info)


#: from this instance seed on, one more property (w5) compares rr too: ``except {g, rr}``, a window on each input
FREE_FROM = 1_000


def _free_prop(rng, name, blob, center) -> Prop:
    """rr in the braces (``except {g, rr}``): x.rr and x'.rr each bounded to a window of its own, a few float32
    steps wide; a pair breaks the post when some float32 each window reaches, and some g, g', give the two points
    another label (a logit difference past eps) at a shared f0 (such two points differ, so the pair is admissible:
    in g, or in rr, whose float64 values round to different float32)."""
    u32 = Fraction(_ulp32(center))
    conds, sides = [], []
    for v in ("x", "x'"):
        mid = Fraction(center) + Fraction(int(rng.integers(-6, 7))) * u32 / 2
        lo = mid - Fraction(int(rng.integers(0, 4))) * u32 / 2 - Fraction(1, 10 ** 10)
        hi = mid + Fraction(int(rng.integers(0, 4))) * u32 / 2 + Fraction(1, 10 ** 10)
        side = [_cond(rng, v, lo, True), _cond(rng, v, hi, False)]
        conds += side
        sides.append(side)
    post = "label" if rng.random() < 0.6 else "logit"
    reach = [[_reached(_float_bounds(sd, k)) for sd in sides] for k in (FLOAT, DECIMAL)]
    allf = sorted({f for rk in reach for fl in rk for f in fl})
    Z = _scores(blob, allf)
    op = eps = None
    if post == "logit":
        diffs = [abs(Fraction(Z[(f, g, f0)]) - Fraction(Z[(f2, g2, f0)])) for f in reach[1][0] for f2 in reach[1][1]
                 for g in (0, 1) for g2 in (0, 1) for f0 in range(3)]
        op = "<=" if rng.random() < 0.6 else "<"
        eps = (decimal_text(max(diffs)) or f"{float(max(diffs)):.6g}") if diffs and rng.random() < 0.6 else \
            str(rng.choice(["0.5", "1", "2", "4"]))
        if op == "<" and Fraction(eps) == 0:
            op = "<="

    def broken(za, zb):
        if post == "label":
            return (za > 0) != (zb > 0)
        dd = abs(Fraction(za) - Fraction(zb))
        return dd > Fraction(eps) if op == "<=" else dd >= Fraction(eps)

    stats = []
    for fx, fy in reach:
        bad = any(broken(Z[(f, g, f0)], Z[(f2, g2, f0)]) for f in fx for f2 in fy for g in (0, 1) for g2 in (0, 1)
                  for f0 in range(3))
        stats.append("violated" if bad else "holds")
    status = stats[0] if stats[0] == stats[1] else "reading-dependent"
    backend = str(rng.choice(["default", "default", "milp", "smt"]))
    lines = ["forall x, x' : F", "require x.* == x'.* except {g, rr}"] + [f"require {c.text}" for c in conds]
    lines.append("ensure label(m(x)) == label(m(x'))" if post == "label"
                 else f"ensure |logit(m(x)) - logit(m(x'))| {op} {eps}")
    if backend != "default":
        lines.append(f"using {backend}")
    lines.append("timeout = 20s")
    text = f"property {name} {{\n  " + "\n  ".join(lines) + "\n}"

    def check(w):
        if not w:
            return "a violation without a witness"
        pts = []
        for side, sd in zip(("features", "features_prime"), sides):
            ft = w.get(side) or {}
            try:
                rr = ft["rr"]
                r = Fraction(rr) if isinstance(rr, str) else Fraction(float(rr))
                g = {"A": 0, "B": 1}[str(ft["g"])]
                f0 = int(ft["f0"])
            except (KeyError, TypeError, ValueError):
                return f"the witness's {side} {ft!r} is not a domain point"
            if not (0 <= r <= 1) or f0 not in (0, 1, 2):
                return f"the witness's {side} {ft!r} is outside the domain"
            for c in sd:
                if not all(c.fn(r, k) for k in (FLOAT, DECIMAL)):
                    return f"the witness's {side} rr = {float(r)!r} breaks {c.text} in a reading of its constants"
            pts.append((r, g, f0))
        if pts[0][2] != pts[1][2]:
            return "the witness pair differs in f0, which the pre-condition ties"
        if pts[0][:2] == pts[1][:2]:
            return "the witness pair differs in neither g nor rr"
        X = np.array([[float(p[0]), p[1], p[2]] for p in pts], dtype=np.float64).astype(np.float32)
        z = [float(v) for v in np.asarray(run_onnx(blob, X), dtype=np.float64).reshape(-1)]
        if not broken(z[0], z[1]):
            return f"the witness pair's logits {z} meet the post-condition on the runtime"
        return None

    truth = Truth(status, check_witness=check, domain=-1, pairs=36 * max(1, len(allf)),
                  note=f"float32 inputs reached (x, x'): float reading {reach[0]}, decimal reading {reach[1]}")
    meta = {"post": post, "op": op, "eps": eps, "backend": backend, "mode": "prove", "runtime": "onnx",
            "dtype": "float32", "center": str(center), "free": True, "window": [c.text for c in conds]}
    return Prop(name, FAMILY, text, truth, meta, 20.0)


#: from this instance seed on, three logit properties in ten maximize
MAXIMIZE_FROM = 1_000


def _scores(blob, fl) -> dict:
    """{(rr float32, g, f0): the runtime's logit}."""
    if not fl:
        return {}
    pts = [(f, g, f0) for f in fl for g in (0, 1) for f0 in range(3)]
    X = np.array(pts, dtype=np.float32)
    z = np.asarray(run_onnx(blob, X), dtype=np.float64).reshape(-1)
    return {p: float(v) for p, v in zip(pts, z)}


def _status(Z, fl, post, op, eps) -> str:
    for f in fl:
        for f0 in range(3):
            z0, z1 = Z[(f, 0, f0)], Z[(f, 1, f0)]
            if post == "label":
                if (z0 > 0) != (z1 > 0):
                    return "violated"
            else:
                dd = abs(Fraction(z1) - Fraction(z0))
                if (dd > Fraction(eps)) if op == "<=" else (dd >= Fraction(eps)):
                    return "violated"
    return "holds"


def _checker(blob, conds, post, op, eps):
    def check(w):
        if not w:
            return "a violation without a witness"
        pts = []
        for side in ("features", "features_prime"):
            ft = w.get(side) or {}
            try:
                rr = ft["rr"]
                r = Fraction(rr) if isinstance(rr, str) else Fraction(float(rr))
                g = {"A": 0, "B": 1}[str(ft["g"])]
                f0 = int(ft["f0"])
            except (KeyError, TypeError, ValueError):
                return f"the witness's {side} {ft!r} is not a domain point"
            if not (0 <= r <= 1) or f0 not in (0, 1, 2) or not math.isfinite(float(r)):
                return f"the witness's {side} {ft!r} is outside the domain"
            pts.append((r, g, f0))
        if pts[0][0] != pts[1][0] or pts[0][2] != pts[1][2]:
            return "the witness pair differs in rr or f0, which the pre-condition ties"
        if pts[0][1] == pts[1][1]:
            return "the witness pair does not differ in g"
        r = pts[0][0]
        for c in conds:
            if not all(c.fn(r, k) for k in (FLOAT, DECIMAL)):
                return f"the witness's rr = {float(r)!r} breaks {c.text} in a reading of its constants"
        X = np.array([[float(r), p[1], p[2]] for p in pts], dtype=np.float64).astype(np.float32)
        z = [float(v) for v in np.asarray(run_onnx(blob, X), dtype=np.float64).reshape(-1)]
        if post == "label":
            if (z[0] > 0) == (z[1] > 0):
                return f"the witness pair gets the same label on the runtime (logits {z})"
        else:
            dd = abs(Fraction(z[0]) - Fraction(z[1]))
            if (dd <= Fraction(eps)) if op == "<=" else (dd < Fraction(eps)):
                return f"the witness pair's logits {z} differ by {float(dd)!r}, which meets {op} {eps}"
        return None

    return check
