"""Shared paths and helpers for the fairspec test-suite."""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
OK = FIXTURES / "ok"
ERRORS = FIXTURES / "errors"
EXAMPLES = REPO / "examples"

# Tests write specs to temporary folders that name the repository's fixtures, data and models:
# let every spec (in this process and in the `fairspec` subprocesses) read inside the repository.
# The confinement tests (test_hostile.py) clear this to see the default.
os.environ["FAIRSPEC_ALLOW_PATH"] = str(REPO)

# One BLAS / OpenMP thread in this process and its subprocesses (`fairspec` runs, language servers), as
# fairspec's own workers run (fairspec.runtime.jobs.SINGLE_THREAD_ENV), set before numpy, scikit-learn or
# torch is first imported: the suite's models and matrices are small, and a pool of threads only spins
# against the other pytest-xdist worker for the two cores (measured: tests/test_pipeline_team.py
# 229 s -> 71 s, 40 -> 20 CPU s; one LogisticRegression fit 0.30 -> 0.016 CPU s). Results are the same.
# An explicit value in the environment is kept.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
             "NUMEXPR_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# a label individual-fairness property over F (a protected g), numbered {k}, its backend line(s) {using}: the
# label-tie tests' brute-force specs (test_label_decision_runtime, test_label_equal_logits,
# test_linear_classifier_networks)
LABEL_PAIR_PROP = """property p{k} {{
  forall x, x' : F
  require x.* == x'.* except {{g}}
  ensure label(m(x)) == label(m(x'))
  {using}
}}
"""


def people_decls(data="../data/people.csv", features: str = "People") -> str:
    """Spec text declaring ``data people`` (tests/fixtures/data/people.csv, or the path given)
    and its feature set ``features``: the declarations most tests build on."""
    return (f'data people = csv("{data}", label = hired == "yes")\n'
            f"features {features} from people {{\n"
            "  age    : int in [18, 80]\n"
            "  sex    : {F, M}  protected\n"
            "  race   : {A, B, C}  protected\n"
            "  member : bool\n"
            "  score  : real in [0, 1]\n"
            "}\n")


_EXPECT = re.compile(r"^#\s*expect:\s*(FS\d{3})\s+(?:(\S+):)?(\d+):(\d+)\s*$")


def protected_weight_net(seed: int, weight: float, ties: bool = True, zero_bias: bool = False, name: str = "net",
                         hidden=(6, 5), grid: int = 4):
    """A small ReLU net over four inputs (the protected one last), the protected input's first-layer
    weights scaled by ``weight``; with ``ties`` every weight and bias a multiple of 1/``grid`` (many
    logits exactly 0 on the integer grid); ``zero_bias``: no output bias."""
    import numpy as np

    from fairspec.models.network import Layer, PLNet, random_net

    net = random_net(seed, 4, tuple(hidden))
    layers = []
    for k, lay in enumerate(net.layers):
        W, b = lay.W.copy(), lay.b.copy()
        if k == 0:
            W[:, 3] *= weight
        if ties:
            W, b = np.round(grid * W) / grid, np.round(grid * b) / grid
        if zero_bias and k == len(net.layers) - 1:
            b = np.zeros_like(b)
        layers.append(Layer(W, b, lay.relu))
    return PLNet(tuple(layers), 0, net.final, f"{name}-{seed}")


def tie_net(seed: int, n: int, hidden):
    """A small ReLU network with integer weights and biases in [-2, 2] (output bias in [-1, 1]):
    many inputs land exactly on a logit of 0, where ``<`` and ``<=`` part."""
    import numpy as np

    from fairspec.models.network import Layer, PLNet

    rng = np.random.default_rng(seed)
    layers, d = [], n
    for h in hidden:
        layers.append(Layer(rng.integers(-2, 3, size=(h, d)).astype(float), rng.integers(-2, 3, size=h).astype(float),
                            True))
        d = h
    layers.append(Layer(rng.integers(-2, 3, size=(1, d)).astype(float), rng.integers(-1, 2, size=1).astype(float),
                        False))
    return PLNet(tuple(layers), 0, "sigmoid", f"tie_net({seed})")


def ok_fixtures() -> list[Path]:
    return sorted(OK.glob("*.fair"))


def error_fixtures() -> list[Path]:
    return sorted(ERRORS.glob("*.fair"))


def expectations(path: Path) -> set[tuple[str, str, int, int]]:
    """The `# expect: CODE [file:]line:col` header lines of a fixture, as (code, file, line, col).

    `file` is relative to the fixture's folder; it defaults to the fixture itself.
    """
    out = set()
    text = path.read_bytes().decode("utf-8", errors="replace")
    for line in text.splitlines():
        m = _EXPECT.match(line.strip())
        if m:
            code, file, ln, col = m.groups()
            out.add((code, file or path.name, int(ln), int(col)))
    return out


def diagnostic_key(d, fixture: Path) -> tuple[str, str, int | None, int | None]:
    """(code, file relative to the fixture's folder, line, col) of a diagnostic."""
    if d.span is None:
        return d.code, "<none>", None, None
    f = Path(d.span.file)
    if not f.is_absolute():
        f = Path.cwd() / f
    try:
        rel = os.path.relpath(f.resolve(), fixture.parent.resolve())
    except ValueError:
        rel = str(f)
    return d.code, rel.replace(os.sep, "/"), d.span.line, d.span.column


def fairspec_command() -> list[str]:
    """The installed `fairspec` console script, or the module when the script is not on PATH."""
    exe = shutil.which("fairspec")
    return [exe] if exe else [sys.executable, "-m", "fairspec.cli"]


def _warm_language_server(client) -> None:
    """The suite's language servers (fairspec.lsp.client.Session, test_lsp_hostile's processes) forked
    from tests/cli_forkserver.py's warm server through its relay: ~100 sessions no longer start Python and
    import fairspec, pygls and lsprotocol each (~0.8 s CPU a start)."""
    import cli_forkserver

    fresh = client.server_command

    def server_command() -> list[str]:
        return cli_forkserver.command("lsp") or fresh()

    client.server_command = server_command


class _WarmOnImport(importlib.abc.MetaPathFinder):
    """fairspec.lsp.client patched by _warm_language_server as it is imported, not imported here: lsprotocol
    costs ~0.55 CPU s in every pytest process that loads this file, most of which start no language server (the
    xdist controller, test_packaging's inner `pytest -n 2` and its two workers)."""

    NAME = "fairspec.lsp.client"

    def find_spec(self, name, path, target=None):
        if name != self.NAME:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        loader = spec.loader

        class Loader(importlib.abc.Loader):
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                _warm_language_server(module)

        spec.loader = Loader()
        return spec


if _WarmOnImport.NAME in sys.modules:
    _warm_language_server(sys.modules[_WarmOnImport.NAME])
else:
    sys.meta_path.insert(0, _WarmOnImport())


def _cli_env(overrides: dict | None = None) -> dict[str, str]:
    """The environment of a `fairspec` command line a test starts: the test's, without FAIRSPEC_DEBUG,
    COLUMNS=200, then ``overrides`` (None removes a variable). COLUMNS is set, not defaulted: the
    report honours it off a terminal, and a pytest-xdist worker has COLUMNS=80 of its own (a test
    that wants a width passes it in ``overrides``)."""
    env = dict(os.environ)
    env.pop("FAIRSPEC_DEBUG", None)
    env["COLUMNS"] = "200"
    for key, value in (overrides or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(value)
    return env


def run_cli(*args, cwd=None, timeout=120, env=None) -> subprocess.CompletedProcess:
    """`fairspec ARGS` in a process of its own, as a user runs it: forked from a warm server that has
    numpy, pandas, scikit-learn and fairspec imported (tests/cli_forkserver.py: the same exit code,
    stdout and stderr, without a few hundred interpreter starts), or a fresh subprocess when the
    command line needs one (``FAIRSPEC_TEST_FRESH_PROCESS=1`` for all).

    ``env``: overrides of the test's environment for this command line (a value of None removes the
    variable), applied after the defaults (no FAIRSPEC_DEBUG, COLUMNS=200)."""
    import cli_forkserver

    env = _cli_env(env)
    argv = [str(a) for a in args]
    done = cli_forkserver.run(argv, str(cwd or REPO), env, timeout)
    if done is not None:
        return done
    return subprocess.run([*fairspec_command(), *argv], cwd=cwd or REPO,
                          capture_output=True, text=True, timeout=timeout, env=env)


def checkout_paths(root: Path = REPO):
    """Every file and folder of the checkout below ``root``, without .git, __pycache__, node_modules
    and virtual environments (a folder holding pyvenv.cfg: .ci/run builds .venv-ci inside the checkout,
    ~46,000 files that a test walking the checkout read, and matched names against, in CI only)."""
    for here, dirs, files in os.walk(root):
        base = Path(here)
        dirs[:] = sorted(d for d in dirs if d not in (".git", "__pycache__", "node_modules")
                         and not (base / d / "pyvenv.cfg").is_file())
        for name in dirs + sorted(files):
            yield base / name


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """(mtime_ns, size) of every file under folder: to prove a command wrote nothing there."""
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


# a distribution spec whose first property carries a verdict note (p(Q) is not used: its table
# conditions on P): test_verdict_notes, test_pytest_plugin
NOTED_DIST = """\
features W {
  P : bool protected
  Q : bool
  R : bool
  S : bool
}

model m = rule(P + Q + R - S >= 2)

distribution d {
  p(Q) = 0.4
  p(Q | P) = 0.6
  p(Q | not P) = 0.3
  p(R) = 0.5
  p(S) = 0.3
}

property sp {
  statistical_parity(m, groups P, distribution d) <= 0.1
}
"""
NOTED_DIST_NOTE = "p(Q) = 0.4 is not used: the table of 'Q' conditions on P"


_SHIPPED_TIE: dict = {}


def shipped_batch_tie(tmp_root: Path) -> bool:
    """Does this machine's torch score a point of the soundness harness's shipped-42000120 model (a Sequential
    ending in Sigmoid, logit exactly 0 at one point) otherwise alone than in the data file's batch of 89 rows?
    Where the session-21 tests were written it gave 0.50000006 alone and 0.49999994 in the batch; on other CPUs
    (an AMD EPYC's float32 kernels, session 27) both are 0.49999994, so there is no batch tie to re-check there
    and the tests that need one skip (the re-check's logic is tested on a synthetic batch-rounding model in
    test_batch_recheck_paths)."""
    if "tie" not in _SHIPPED_TIE:
        import numpy as np
        import pandas as pd

        from differential import campaign
        from fairspec.models.torch_model import load_torch

        inst = campaign.families()["shipped"](42000120)
        folder = tmp_root / "shipped_42000120_probe"
        folder.mkdir(parents=True, exist_ok=True)
        for k, v in inst.files.items():
            (folder / k).write_bytes(v)
        m = load_torch(folder / "m.pt", score_kind="prob")
        d = pd.read_csv(folder / "d.csv")
        g, f0 = d["g"].astype(float).to_numpy(), d["f0"].astype(float).to_numpy()
        tie = False
        for X in (np.column_stack([1 - g, g, f0]), np.column_stack([g, 1 - g, f0])):
            s = np.asarray(m.score(X), dtype=np.float64).reshape(-1)
            for p in np.unique(X, axis=0):
                alone = float(np.asarray(m.score(p[None, :]), dtype=np.float64).reshape(-1)[0])
                tie |= bool(np.any(s[(X == p).all(axis=1)] != alone))
        _SHIPPED_TIE["tie"] = tie
    return _SHIPPED_TIE["tie"]


NO_BATCH_TIE = ("this machine's torch scores every point of shipped-42000120 alike alone and in the data's batch: "
                "no batch tie to re-check here")


def hand_set_logistic(coef, intercept):
    """A scikit-learn LogisticRegression on two inputs whose coefficients and intercept are set by hand (dyadic
    values give exact ties in predict_proba); fitted first on four rows so scikit-learn takes it as fitted."""
    pytest.importorskip("sklearn")
    import warnings

    import numpy as np
    from sklearn.linear_model import LogisticRegression

    est = LogisticRegression()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 2.0], [1.0, 3.0]]), [0, 1, 0, 1])
    est.coef_, est.intercept_ = np.array([coef], dtype=np.float64), np.array([intercept], dtype=np.float64)
    return est


def pytest_configure(config):
    """FAIRSPEC_SUITE_PROFILE=DIR: each test's wall and CPU (its process, reaped children and live descendants)
    written to DIR (tests/suite_profile.py; summed by bench/suite_profile_report.py). Unset: nothing loaded."""
    if os.environ.get("FAIRSPEC_SUITE_PROFILE"):
        import suite_profile

        suite_profile.register(config)
