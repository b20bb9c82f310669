"""The brute-force differential harness (issue 20, deliverable 7).

Generators of small random instances per family (networks.py, trees.py, ...), each writing a
real spec, real model files and real data files, with the truth of every property computed by
enumeration on the model's own runtime; judge.py runs fairspec's real entry point and
classifies each verdict; campaign.py runs many instances (bench/soundness.py, and the fixed
slice in tests/test_soundness_slice.py). A property may also be an expected refusal
(core.Expect: a spec fairspec must refuse with a given code at lint or check, exit code 2, no
traceback), judged on the command line's exit code and JSON (judge.judge_refusal); the
``shipped`` family (shipped.py) draws them beside the verdicts of the declaration that names
what the ambiguous one leaves unsaid.
"""
