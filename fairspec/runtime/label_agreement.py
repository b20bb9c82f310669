"""FS439 at check: what one property's evaluations of an ONNX classifier showed of its own label output
against the declared output the spec reads (fairspec.models.onnx_agreement compares them).

The verdict stays about the declared output (that is what the spec names); when the classifier node's
label names another class on some of the inputs the property evaluated, that is said -- a warning at the
model's declaration (``Context.warn_at``: text, JSON and SARIF carry it as lint's; acknowledged by
``# fairspec: ignore[FS439]`` there or ``--ignore FS439``), naming the property, how many inputs of how
many, one of them, and which output is decided.
"""

from __future__ import annotations

CODE = "FS439"


def judge(ctx, prop) -> None:
    """FS439 for each loaded ONNX model whose label and declared output disagreed on an input the property
    ``prop`` evaluated; what every loaded model compared is taken (the next property starts afresh)."""
    for name, model in ctx.loaded_models():
        agree = getattr(model, "label_agreement", None)
        tally = agree.take() if agree is not None else None
        if tally is None or not tally.differ:
            continue
        decl = ctx.spec.model(name)
        ctx.warn_at(CODE, message(name, prop.name, model, tally, _example(ctx, name, tally.example[0])),
                    decl.span, hint(model))


def _example(ctx, name: str, x) -> str:
    """The example input as the spec's feature values where the encoding is at hand, else the encoded
    vector the model was fed."""
    enc = ctx.known_encoding(name)
    if enc is not None:
        fs = ctx.spec.feature_set(enc.features)
        if fs is not None:
            try:
                from fairspec.runtime.encoding import decode_row
                from fairspec.syntax import literals

                values = decode_row(enc, fs, x)
                return ", ".join(f"{k} = {literals.value(v)}" for k, v in values.items())   # "Never-married" quoted
            except (ValueError, IndexError, TypeError):
                pass
    from fairspec.syntax import literals

    return "the encoded input " + literals.vector(float(v) for v in x)   # each number as it is, not {:g}



def _class(classes, j: int) -> str:
    return repr(classes[j]) if 0 <= j < len(classes) else "a label none of the node's classes"


def message(name: str, prop: str, model, tally, example: str) -> str:
    sib = model.label_agreement.sibling
    out = model.output_name
    _, lab, read, how, rule = tally.example
    inputs = f"{tally.rows} inputs" + (" (the most compared for one property)" if tally.capped else "")
    alone = f", {tally.alone} of them also run alone" if tally.alone else ""
    what = (f"class(m(x)) (the argmax of {out!r})" if rule == "class"
            else f"label(m(x)) ({model.readout.describe()} of {out!r})")
    ran = "run alone" if how == "alone" else "run in a batch"
    return (f"property '{prop}' evaluated model '{name}' on {inputs}{alone}: on {tally.differ} of them the "
            f"{sib.op_type} node that computes output {out!r} names another class in its own label output "
            f"{sib.label!r} (e.g. {example}, {ran}: {sib.label!r} says {_class(sib.classes, lab)}, {what} says "
            f"{_class(sib.classes, read)}); the verdict is about output {out!r}, the one the declaration names")


def hint(model) -> str:
    out = model.output_name
    rule = f"; label(m(x)): {model.readout.describe()}" if model.readout.has_decision else ""
    return (f"fairspec decides the declared output {out!r} (class(m(x)): the argmax of its columns{rule}), never "
            f"the label output; if the model's label is the decision you "
            f"mean, export scores that agree with it (an SVC: its decision_function rather than Platt "
            f"probabilities), or acknowledge the difference with # fairspec: ignore[{CODE}]")
