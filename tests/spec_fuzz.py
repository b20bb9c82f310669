"""Grammar-aware spec fuzzing, shared by tests/test_fuzz_grammar.py (a bounded run in CI) and
bench/fuzz.py (the long run).

Two sources of cases, both deterministic for a given random.Random:

* :meth:`SpecFuzzer.generate` expands grammar/fairspec.lark at random (the parser's own rules,
  so the generator follows the grammar as it changes); terminals are drawn from the words of
  the shipped examples and fixtures and from hostile values (huge numbers, paths out of the
  project, long strings, unicode);
* :meth:`SpecFuzzer.mutate` takes a shipped example or ok fixture (relative paths made absolute)
  and applies one to three mutations: a token deleted, duplicated, swapped or replaced, a huge
  number, a deep chain or nesting, a very long line, random bytes, truncation.

:func:`run_case` lints one case in-process and renders its diagnostics in every format; any
exception is a finding (an internal error).
"""

from __future__ import annotations

import random
import re
import traceback
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES_GLOBS = ("examples/**/*.fair", "tests/fixtures/ok/*.fair", "specs/**/*.fair")

_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"'                       # strings
    r"|#[^\n]*"                                   # comments
    r"|[A-Za-z_][A-Za-z0-9_]*'?"                 # names, primed names
    r"|[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?(?:ms|min|s|h)?"  # numbers, durations
    r"|==|!=|<=|>="
    r"|\s+"
    r"|.", re.S)

HUGE = ["9" * 400, "1" * 5000, "1e999", "123456789012345678901234567890", "1e308", "0." + "0" * 400 + "1"]
HOSTILE_STRINGS = ['"/etc/passwd"', '"../../../../../../etc/passwd"', '"fairspec/../../../../../../etc/passwd"',
                   '"/dev/zero"', '"."', '".."', '"' + "x" * 300 + '.csv"', '""', '"\\n\\t\\\\"',
                   '"é€😀"', '"' + "a/" * 200 + 'b.onnx"']
HOSTILE_BYTES = ["\x00", "\ufeff", "\u202e", "😀", "\\", "'", "\r", "\t", "é", "\x7f", "\ud7ff"]


def absolute_paths(path: Path) -> str:
    """The spec's text with every relative file path made absolute (imports of fairspec/... stay)."""
    text = path.read_text(encoding="utf-8")

    def fix(m):
        s = m.group(0)[1:-1]
        if s.startswith("fairspec/") or s.startswith("/"):
            return m.group(0)
        if "/" in s or s.endswith((".fair", ".csv", ".onnx", ".skops", ".pkl", ".pt", ".ssv", ".json", ".txt",
                                   ".parquet", ".ubj")):
            return '"' + str((path.parent / s).resolve()) + '"'
        return m.group(0)

    return _STRING.sub(fix, text)


@lru_cache(maxsize=1)
def shipped_sources() -> tuple[str, ...]:
    files = sorted({p for g in SOURCES_GLOBS for p in REPO.glob(g)})
    return tuple(absolute_paths(p) for p in files)


class SpecFuzzer:
    def __init__(self) -> None:
        from fairspec.syntax.parser import _parser

        p = _parser()
        self.terminals = {t.name: t for t in p.terminals}
        self.rules: dict[str, list[list[tuple[str, bool]]]] = {}
        for r in p.rules:
            exp = [(s.name, s.is_term) for s in r.expansion]
            self.rules.setdefault(r.origin.name, []).append(exp)
        self.cost = self._costs()
        self.sources = shipped_sources()
        self.tokens = [TOKEN.findall(s) for s in self.sources]
        words = [t for toks in self.tokens for t in toks if t.strip() and not t.startswith("#")]
        self.names = sorted({w for w in words if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", w)})
        self.strings = sorted({w for w in words if w.startswith('"')})
        self.numbers = sorted({w for w in words if re.fullmatch(r"[0-9][0-9.eE+-]*", w)})
        self.words = words

    def _costs(self) -> dict[str, int]:
        """The fewest terminals each rule derives (to close a derivation once it is deep)."""
        cost = {name: 10**9 for name in self.rules}
        changed = True
        while changed:
            changed = False
            for name, exps in self.rules.items():
                for exp in exps:
                    c = sum(1 if term else cost.get(sym, 10**9) for sym, term in exp)
                    if c < cost[name]:
                        cost[name], changed = c, True
        return cost

    # ------------------------------------------------------------------ generation from the grammar
    def terminal(self, rnd: random.Random, name: str) -> str:
        t = self.terminals[name]
        if type(t.pattern).__name__ == "PatternStr":
            return t.pattern.value
        r = rnd.random()
        if name == "NAME":
            return rnd.choice(self.names) if r < 0.85 else rnd.choice(["x", "_", "a" * rnd.randint(1, 300), "z9"])
        if name == "PRIMED_NAME":
            return rnd.choice(["x'", "y'", "b'", "a" * 50 + "'"])
        if name == "NUMBER":
            if r < 0.1:
                return rnd.choice(HUGE)
            return rnd.choice(self.numbers) if r < 0.7 else str(rnd.choice([0, 1, 2, 10, 30, 100, 10**6, 10**15]))
        if name == "DURATION":
            return rnd.choice(["1s", "500ms", "2min", "1h", "0s", "9" * 40 + "h", "0.001ms"])
        if name == "STRING":
            return rnd.choice(HOSTILE_STRINGS) if r < 0.15 else rnd.choice(self.strings)
        if name == "COMP_OP":
            return rnd.choice(["==", "!=", "<=", ">=", "<", ">"])
        if name == "CLAUSE":
            return rnd.choice(["groups", "over", "flip", "around", "distribution", "mediators", "delta", "given"])
        if name == "TRUST":
            return "trust"
        if name == "X_OP":
            return "x"
        if name == "COMMENT":
            return "# c\n"
        raise KeyError(name)

    def generate(self, rnd: random.Random, start: str = "start", budget: int = 400) -> str:
        """A random derivation of ``start`` with about ``budget`` symbols, iteratively expanded."""
        out: list[str] = []
        stack: list[tuple[str, bool, int]] = [(start, False, 0)]
        used = 0
        while stack:
            sym, term, depth = stack.pop()
            if term:
                out.append(self.terminal(rnd, sym))
                continue
            exps = self.rules[sym]
            if used > budget or depth > 40:
                exps = sorted(exps, key=lambda e: sum(1 if t else self.cost[s] for s, t in e))[:1]
            exp = rnd.choice(exps)
            used += len(exp)
            stack.extend((s, t, depth + 1) for s, t in reversed(exp))
        sep = rnd.choice([" ", " ", " ", "\n"])
        return sep.join(out) + "\n"

    # ------------------------------------------------------------------ mutations of shipped specs
    def mutate(self, rnd: random.Random) -> str:
        i = rnd.randrange(len(self.sources))
        toks = list(self.tokens[i])
        for _ in range(rnd.randint(1, 3)):
            toks = self._mutation(rnd, toks)
        return "".join(toks)

    def _mutation(self, rnd: random.Random, toks: list[str]) -> list[str]:
        if not toks:
            return [rnd.choice(self.words)]
        k = rnd.randrange(len(toks))
        op = rnd.randrange(12)
        if op == 0:  # delete a token
            return toks[:k] + toks[k + 1:]
        if op == 1:  # duplicate a token
            return toks[:k + 1] + [toks[k]] + toks[k + 1:]
        if op == 2 and k + 1 < len(toks):  # swap with the neighbour
            toks[k], toks[k + 1] = toks[k + 1], toks[k]
            return toks
        if op == 3:  # replace a token with a word of some spec
            toks[k] = rnd.choice(self.words)
            return toks
        if op == 4:  # a huge number where a number is
            nums = [j for j, t in enumerate(toks) if re.fullmatch(r"[0-9][0-9.eE+-]*", t)]
            if nums:
                toks[rnd.choice(nums)] = rnd.choice(HUGE)
            return toks
        if op == 5:  # a long chain or deep nesting around a name
            names = [j for j, t in enumerate(toks) if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*'?", t)]
            if names:
                j = rnd.choice(names)
                n = rnd.choice([50, 200, 1000, 3000])
                t = toks[j]
                toks[j] = rnd.choice([
                    " and ".join([t] * n), " or ".join([t] * n), "not " * n + t, "- " * n + t,
                    " + ".join([t] * n), "(" * n + t + ")" * n, " - ".join([t] * n), "|" * n + t + "|" * n,
                ])
            return toks
        if op == 6:  # a very long line: one token repeated
            return toks[:k] + [toks[k] * rnd.choice([100, 5000, 30000])] + toks[k + 1:]
        if op == 7:  # odd characters
            return toks[:k] + [rnd.choice(HOSTILE_BYTES)] + toks[k:]
        if op == 8:  # truncate
            return toks[:k]
        if op == 9:  # a hostile string in place of a string
            strs = [j for j, t in enumerate(toks) if t.startswith('"')]
            if strs:
                toks[rnd.choice(strs)] = rnd.choice(HOSTILE_STRINGS)
            return toks
        if op == 10:  # a generated declaration spliced in
            return toks[:k] + [" ", self.generate(rnd, budget=60), " "] + toks[k:]
        # a block of the file repeated (many declarations, many errors)
        j = min(len(toks), k + rnd.randint(1, 40))
        return toks[:j] + toks[k:j] * rnd.choice([2, 10, 200]) + toks[j:]

    def case(self, rnd: random.Random) -> tuple[str, str]:
        if rnd.random() < 0.5:
            return "grammar", self.generate(rnd, budget=rnd.choice([30, 100, 400, 1500]))
        return "mutant", self.mutate(rnd)


def run_case(text: str, path: Path) -> str | None:
    """Lint ``text`` written at ``path``; None, or the internal error (exception and last frames)."""
    from fairspec.diagnostics import render
    from fairspec.pipeline import lint

    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        res = lint(path)
        for fmt in ("text", "concise", "json"):
            render(res.diagnostics, fmt)
    except RecursionError:
        return "RecursionError\n" + "".join(traceback.format_exc(limit=-6))
    except Exception as e:  # noqa: BLE001 - every exception is a finding
        return f"{type(e).__name__}: {str(e)[:300]}\n" + "".join(traceback.format_exc(limit=-6))
    return None
