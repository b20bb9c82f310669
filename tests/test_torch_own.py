"""A trusted pickle runs code at load, which can patch torch itself so that the layers fairspec reads as
Linear / ReLU / ... run other code (``models.torch_own``): whatever torch code the eager layers reach --
their classes, nn.Module's call path, torch.Tensor, the functions their forward names (``F.linear``,
``torch.relu``, a function's ``__code__``), the dispatcher's kernels, a mode left active -- is compared
with what it was before the first pickle; a change is refused (``unknown`` naming the file; the brute
force of a patched pickle is in ``test_torch_chain``). Each patch here is undone after its test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from fairspec.models import torch_own  # noqa: E402
from fairspec.models.base import UnsupportedModel  # noqa: E402
from fairspec.models.network_torch import from_torch  # noqa: E402


def _moved(*args, **kwargs):
    raise AssertionError("a patch of torch: the module running it is refused")


def _setattr(obj, name, value):
    had, old = name in vars(obj), vars(obj).get(name)
    setattr(obj, name, value)

    def undo():
        if had:
            setattr(obj, name, old)
        else:
            delattr(obj, name)
    return undo


def _library_kernel():
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("linear", lambda x, w, b=None: torch.ones(x.shape[0], w.shape[0]), "CPU")
    return lib._destroy


def _dispatch_mode():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    mode = Mode()
    mode.__enter__()
    return lambda: mode.__exit__(None, None, None)


def _function_code():
    f = torch.nn.functional.relu
    old = f.__code__
    f.__code__ = (lambda input, inplace=False: input).__code__

    def undo():
        f.__code__ = old
    return undo


def _flush_denormal():
    torch.set_flush_denormal(True)
    return lambda: torch.set_flush_denormal(False)


def _matmul_precision():
    old = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium")
    return lambda: torch.set_float32_matmul_precision(old)


def _autocast():
    torch.set_autocast_enabled("cpu", True)          # Linear then computes in bfloat16 on the CPU
    return lambda: torch.set_autocast_enabled("cpu", False)


PATCHES = {
    "Linear.forward": (lambda: _setattr(torch.nn.Linear, "forward", _moved), "torch.nn.Linear.forward"),
    "ReLU.forward": (lambda: _setattr(torch.nn.ReLU, "forward", _moved), "torch.nn.ReLU.forward"),
    "Module._call_impl": (lambda: _setattr(torch.nn.Module, "_call_impl", _moved), "torch.nn.Module._call_impl"),
    "a Linear.__call__": (lambda: _setattr(torch.nn.Linear, "__call__", _moved), "torch.nn.Linear.__call__"),
    "Sequential.__iter__": (lambda: _setattr(torch.nn.Sequential, "__iter__", _moved), "torch.nn.Sequential.__iter__"),
    "F.linear": (lambda: _setattr(torch.nn.functional, "linear", _moved), "torch.nn.functional.linear"),
    "F in linear.py": (lambda: _setattr(torch.nn.modules.linear, "F", torch), "torch.nn.modules.linear.F"),
    "torch.relu": (lambda: _setattr(torch, "relu", _moved), "torch.relu"),
    "Tensor.__matmul__": (lambda: _setattr(torch.Tensor, "__matmul__", _moved), "torch.Tensor.__matmul__"),
    "F.relu.__code__": (_function_code, "torch.nn.functional.relu.__code__"),
    "_VF.dropout": (lambda: _setattr(torch._VF, "dropout", _moved), "torch._VF.dropout"),
    "a dispatcher kernel": (_library_kernel, "kernels of aten::linear"),
    "a dispatch mode": (_dispatch_mode, "a torch dispatch mode is active"),
    "flush to zero": (_flush_denormal, "torch's arithmetic settings"),
    "matmul precision": (_matmul_precision, "torch's arithmetic settings"),
    "autocast": (_autocast, "torch's arithmetic settings"),
}


def _net():
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Dropout(), torch.nn.Linear(4, 1)).eval()


@pytest.mark.parametrize("patch", list(PATCHES))
def test_torch_patched_after_the_capture_is_refused(patch):
    make, named = PATCHES[patch]
    seq, script = _net(), torch.jit.script(_net())
    torch_own.capture()
    assert torch_own.changed() == ""
    undo = make()
    try:
        for module in (seq, script):          # a TorchScript file's layers run through the same torch
            with pytest.raises(UnsupportedModel, match="other code than torch's") as e:
                from_torch(module)
            assert named in str(e.value), str(e.value)
    finally:
        undo()
    assert torch_own.changed() == "", torch_own.changed()
    assert from_torch(seq).widths == (4, 1)


def test_a_patch_before_the_capture_is_seen_by_where_its_code_comes_from(monkeypatch):
    """torch imported and patched by a pickle fairspec loaded before it imported torch: the capture holds
    the patch, but the forward's code is not in torch's package."""
    monkeypatch.setattr(torch_own, "_state", {})
    undo = _setattr(torch.nn.Linear, "forward", _moved)
    try:
        torch_own.capture("first.pkl")
        assert torch_own.changed() == "torch.nn.Linear.forward is not torch's own after loading first.pkl"
    finally:
        undo()


def test_torch_imported_after_a_pickle_was_loaded_is_no_reference(monkeypatch):
    """A trusted pickle loaded while torch was not imported may import and patch it: the record taken
    later is no reference (unless fairspec imported torch itself after that pickle)."""
    monkeypatch.setattr(torch_own, "_state", {})
    monkeypatch.delitem(__import__("sys").modules, "torch")
    torch_own.capture("model.pkl")                       # torch not imported: nothing recorded
    monkeypatch.setitem(__import__("sys").modules, "torch", torch)
    torch_own.capture(imported_here=True)                # fairspec's own import of torch: a reference
    assert torch_own.changed() == ""
    monkeypatch.setattr(torch_own, "_state", {"files": ["model.pkl"]})
    torch_own.capture()                                 # found imported by someone else
    assert torch_own.changed() == (
        "torch was imported after model.pkl was loaded, by code fairspec did not watch (a method of a pickled "
        "object, say), which may have patched torch before fairspec recorded its own code; import torch before "
        "loading model.pkl, or check the torch model in a process that loads no pickle before it (the command "
        "line, the torch model declared first), so that torch's code is recorded first")
    assert torch_own.no_reference()


class _MovedTensor(torch.Tensor):
    """A weight whose ``__torch_function__`` moves F.linear's logit 1 by 2^-7 at one input (a pickle
    restores a tensor subclass as it is)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        out = super().__torch_function__(func, types, args, kwargs or {})
        if func is torch.nn.functional.linear:
            x = args[0]
            hit = (x[:, 3] > 0.5) & (x[:, 0] == 7) & (x[:, 1] == 3)
            z = torch.zeros_like(out[:, 0])
            out = out + torch.stack([z, torch.where(hit, torch.full_like(z, 2.0 ** -7), z), z], dim=1)
        return out


def test_a_pickled_linear_whose_weight_is_a_tensor_subclass_is_unknown_not_proved(tmp_path, monkeypatch):
    import numpy as np
    from test_torch_chain import _check, _one_gap_linear
    from test_torch_multi_output import _grid, _outputs, _pairs

    seq = _one_gap_linear()
    seq[0]._parameters["weight"] = seq[0].weight.detach().clone().as_subclass(_MovedTensor)
    v = _check(tmp_path, monkeypatch, lambda p: torch.save(seq, str(p)), 'torch("m.pt", score = logit, trust pickle)')
    loaded = torch.load(str(tmp_path / "m.pt"), weights_only=False)
    A, B = _pairs(_outputs(loaded, _grid()))
    assert np.sum(A.argmax(1) != B.argmax(1)) == 1      # the truth, on the loaded module: violated at one point
    assert v["status"] == "unknown", v                  # was holds (proved)
    assert "m.pt" in v["reason"] and "_MovedTensor, not a torch tensor" in v["reason"], v["reason"]


@pytest.mark.parametrize("attr", ["forward", "_call_impl", "_compiled_call_impl", "inplace"])
def test_an_instance_that_carries_its_own_call_path_is_refused(attr):
    seq = _net()
    target = seq[1] if attr == "inplace" else seq[0]
    setattr(target, attr, [False] if attr == "inplace" else _moved)
    with pytest.raises(UnsupportedModel, match="not a plain chain") as e:
        from_torch(seq)
    assert ("compiled" if attr == "_compiled_call_impl" else attr) in str(e.value), str(e.value)


class _PatchesWhenTraced(torch.nn.Module):
    """A forward() whose Python patches torch as it runs (torch.fx runs it to trace it)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(3, 1)

    def forward(self, x):
        torch.nn.Linear.forward = _moved
        return self.a(x)


def test_a_forward_that_patches_torch_when_traced_is_refused():
    m = _PatchesWhenTraced().eval()
    torch_own.capture()
    undo = _setattr(torch.nn.Linear, "forward", torch.nn.Linear.forward)
    try:
        with pytest.raises(UnsupportedModel, match="torch.nn.Linear.forward is not torch's own"):
            from_torch(m)
    finally:
        undo()


class _ShowsFxAChain(torch.nn.Module):
    """A forward() that is a plain chain when torch.fx traces it (its input a Proxy) and moves logit 1 by
    2^-7 at one input when it runs: fx reads the Python of forward() only as traced."""

    def __init__(self, seq):
        super().__init__()
        self.l = seq[0]

    def forward(self, x):
        y = self.l(x)
        if isinstance(x, torch.fx.Proxy):
            return y
        hit = (x[:, 3] > 0.5) & (x[:, 0] == 7) & (x[:, 1] == 3)
        z = torch.zeros_like(y[:, 0])
        return y + torch.stack([z, torch.where(hit, torch.full_like(z, 2.0 ** -7), z), z], dim=1)


def test_an_eager_forward_that_branches_on_being_traced_is_not_proved(tmp_path, monkeypatch):
    import numpy as np
    from test_torch_chain import _check, _one_gap_linear
    from test_torch_multi_output import _grid, _outputs, _pairs

    m = _ShowsFxAChain(_one_gap_linear()).eval()
    A, B = _pairs(_outputs(m, _grid()))
    assert np.sum(A.argmax(1) != B.argmax(1)) == 1      # the truth: violated at one point
    v = _check(tmp_path, monkeypatch, lambda p: torch.save(m, str(p)), 'torch("m.pt", score = logit, trust pickle)')
    assert v["status"] == "unknown", v      # was holds (proved): torch_rerun runs forward() against its trace
    assert "m.pt" in v["reason"] and "run on real inputs it also computes Tensor.__getitem__ (operation 2), " \
                                      "which its torch.fx trace does not" in v["reason"], v["reason"]


class _Runs:
    """Pickled as ``exec(code, {})``: what a trusted pickle's code may do when it is loaded."""

    def __init__(self, code):
        self.code = code

    def __reduce__(self):
        return (exec, (self.code, {}))


_FORKS = """
import json, os, sys, traceback
import numpy, sklearn.linear_model                  # what every case imports before its own steps: not torch
from fairspec.models import load_model
from fairspec.pipeline import check
from fairspec.report import to_json
assert "torch" not in sys.modules
codes = []
for job in json.loads(sys.stdin.read()):
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:                                    # a process of its own per case, torch never imported in it
        os.chdir(job["cwd"])
        os.environ["PYTHONPATH"] = os.pathsep.join(job["path"])
        sys.path[:0] = job["path"]
        sys.argv = ["-c", *job["argv"]]
        for fd, name in ((1, "out.txt"), (2, "err.txt")):
            os.dup2(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
        code = 0
        try:
            exec(compile(job["script"], "<case>", "exec"), {"__name__": "__main__"})
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush(); sys.stderr.flush()
        os._exit(code)
    codes.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
print(json.dumps(codes))
"""


def _run_forked(jobs):
    """Run each job (cwd, path, script, argv) in a process forked from one that imported numpy, scikit-learn
    and fairspec but not torch (was a fresh python per case, each importing those again: what these tests
    are about is only when torch is imported, and that stays each case's own): [(returncode, stdout, stderr)]."""
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, FAIRSPEC_ENUMERATE_PAIRS="0", PYTHONPATH=root)
    run = subprocess.run([sys.executable, "-c", _FORKS], input=json.dumps(jobs), env=env, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    codes = json.loads(run.stdout.strip().splitlines()[-1])
    return [(c, (Path(j["cwd"]) / "out.txt").read_text(), (Path(j["cwd"]) / "err.txt").read_text())
            for c, j in zip(codes, jobs)]


_PATCH_LINEAR = ("import torch\n"
                 "torch.nn.Linear.forward = lambda self, x: torch.nn.functional.linear(x, self.weight, self.bias)\n")
_LOAD_THEN_CHECK = """
import json, sys
from fairspec.models import load_model
from fairspec.pipeline import check
from fairspec.report import to_json
assert "torch" not in sys.modules
load_model("sklearn", sys.argv[1], trust_pickle=True)
assert "torch" in sys.modules                   # the scikit-learn pickle's code imported it
print(json.dumps(json.loads(to_json(check(sys.argv[2])))["properties"][0]))
"""


def _spec(folder):
    from test_torch_chain import _script_saver, _tie_seq
    from test_torch_multi_output import ENCODE, FEATURES, _prop

    _script_saver(_tie_seq())(folder / "m.pt")
    (folder / "spec.fair").write_text(FEATURES + 'model m = torch("m.pt", score = logit)\n' + ENCODE
                                      + _prop("cls", "class(m(x)) == class(m(x'))", "milp", "prove"))


@pytest.fixture(scope="module")
def _forked_cases(tmp_path_factory):
    """Every case of the two tests below, each in a folder of its own, run by one _run_forked (read only)."""
    import os
    import pickle

    from sklearn.linear_model import LogisticRegression

    jobs, keys = [], []
    for code in ("import torch\n", _PATCH_LINEAR):
        folder = tmp_path_factory.mktemp("sk")
        lr = LogisticRegression().fit([[0.0], [1.0]], [0, 1])
        lr.side_ = _Runs(code)
        (folder / "lr.pkl").write_bytes(pickle.dumps(lr))
        _spec(folder)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        jobs.append(dict(cwd=str(folder), path=[root], script=_LOAD_THEN_CHECK, argv=["lr.pkl", "spec.fair"]))
        keys.append(("pickle", code))
    for patch in (False, True):
        for when in ("late", "first"):
            folder = tmp_path_factory.mktemp("lazy")
            (folder / "h5_lazy_torch.py").write_text(_LAZY_TORCH)
            with pytest.MonkeyPatch.context() as mp:
                _pickle_lazy_torch(folder, patch, mp)
            _spec(folder)
            root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            jobs.append(dict(cwd=str(folder), path=[root, str(folder)], script=_LOAD_PREDICT_CHECK,
                             argv=["lr.pkl", "spec.fair", when]))
            keys.append(("lazy", patch, when))
    return dict(zip(keys, _run_forked(jobs)))


def _verdict(run):
    code, out, err = run
    assert code == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("code", ["import torch\n", _PATCH_LINEAR])
def test_a_scikit_learn_pickle_that_imports_torch_before_a_torch_model_loads(_forked_cases, code):
    """torch imported by a trusted scikit-learn pickle's code, before fairspec needs it: torch's code is
    recorded the moment it is imported (torch_own.watching), so a torch model loaded later is proved as
    usual -- and a patch the pickle's code makes after the import is named (was: unknown either way,
    'torch was imported after lr.pkl was loaded')."""
    v = _verdict(_forked_cases["pickle", code])
    if code == _PATCH_LINEAR:
        assert v["status"] == "unknown", v
        assert "torch.nn.Linear.forward is not torch's own after loading lr.pkl" in v["reason"], v["reason"]
    else:
        assert (v["status"], v["how"]) == ("holds", "proved"), v


_LAZY_TORCH = """
from sklearn.linear_model import LogisticRegression


class LazyTorch(LogisticRegression):
    def predict(self, X):
        import torch            # when first asked for a prediction: after the pickle was loaded
        if getattr(self, "patch_", False):
            torch.nn.Linear.forward = lambda self, x: torch.nn.functional.linear(x, self.weight, self.bias)
        return super().predict(X)
"""
_LOAD_PREDICT_CHECK = """
import json, sys
import numpy as np
if sys.argv[3] == "first":
    import torch                                # the advice the reason gives
from fairspec.models import load_model
from fairspec.pipeline import check
from fairspec.report import to_json
k = load_model("sklearn", sys.argv[1], trust_pickle=True)
assert ("torch" in sys.modules) == (sys.argv[3] == "first")
k.raw.predict(np.zeros((1, 1)))                 # the pickled object's method imports torch, outside watching
assert "torch" in sys.modules
print(json.dumps(json.loads(to_json(check(sys.argv[2])))["properties"][0]))
"""


def _pickle_lazy_torch(folder, patch, monkeypatch):
    """lr.pkl: a LazyTorch fit and pickled here (by reference to the module h5_lazy_torch in folder, which
    the checking process imports from its PYTHONPATH); a process of its own to fit it cost ~2 s CPU."""
    import importlib.util
    import pickle

    spec = importlib.util.spec_from_file_location("h5_lazy_torch", folder / "h5_lazy_torch.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "h5_lazy_torch", module)     # pickle finds the class by its module's name
    spec.loader.exec_module(module)
    lr = module.LazyTorch().fit([[0.0], [1.0]], [0, 1])
    lr.patch_ = patch
    (folder / "lr.pkl").write_bytes(pickle.dumps(lr))


@pytest.mark.parametrize("when", ["late", "first"])
@pytest.mark.parametrize("patch", [False, True])
def test_torch_imported_by_a_pickled_objects_method_later_is_unknown_saying_what_to_do(_forked_cases, when, patch):
    """A trusted pickle's object whose method imports torch after its load (outside torch_own.watching): a
    torch model checked later is unknown, with a reason that says why (whether torch is its own cannot be
    told, not that it is not) and what to do -- import torch before loading the pickle -- which, done, proves
    it; a patch that method makes is refused either way (was: 'the layers read would run other code than
    torch's: torch was imported after lr.pkl was loaded, whose code may have patched it ...', no way out)."""
    v = _verdict(_forked_cases["lazy", patch, when])
    if when == "late":                          # patched or not: no reference to tell
        assert v["status"] == "unknown", v
        assert ("m.pt: whether the layers read run torch's own code is unknown: torch was imported after lr.pkl "
                "was loaded, by code fairspec did not watch") in v["reason"], v["reason"]
        assert "; import torch before loading lr.pkl, or check the torch model in a process" in v["reason"], v
    elif patch:                                 # the advice followed: the patch is seen and named
        assert v["status"] == "unknown", v
        assert ("the layers read would run other code than torch's: torch.nn.Linear.forward is not torch's own "
                "after loading lr.pkl") in v["reason"], v["reason"]
    else:
        assert (v["status"], v["how"]) == ("holds", "proved"), v


def test_the_finder_is_there_only_during_a_load(monkeypatch):
    """torch_own.watching adds its finder only while a pickle loads and torch is not imported."""
    import sys

    monkeypatch.setattr(torch_own, "_state", {})
    before = list(sys.meta_path)
    with torch_own.watching("a.pkl"):               # torch imported: recorded at once, no finder
        assert sys.meta_path == before and "entries" in torch_own._state
    monkeypatch.setattr(torch_own, "_state", {})
    monkeypatch.delitem(sys.modules, "torch")
    with torch_own.watching("b.pkl"):
        assert type(sys.meta_path[0]).__name__ == "_TorchImport"
    assert sys.meta_path == before and torch_own._state == {"files": ["b.pkl"]}
