"""The parser: .fair text to the AST, with spans, and syntax errors as FS1xx diagnostics."""

from __future__ import annotations

import pytest

from fairspec.diagnostics import DiagnosticError
from fairspec.syntax import ast
from fairspec.syntax.parser import parse_file, parse_text


def parse(text: str) -> ast.Module:
    return parse_text(text, "t.fair")


def one(text: str):
    (d,) = parse(text).decls
    return d


def syntax_error(text: str):
    with pytest.raises(DiagnosticError) as e:
        parse(text)
    (d,) = e.value.diagnostics
    return d


def claim(text: str):
    """The expression of a one-claim property."""
    p = one("property p {\n  " + text + "\n}")
    (st,) = p.stmts
    return st.args[0]


# ------------------------------------------------------------------ spans

def test_spans_on_declarations_and_names():
    m = parse('# header\n\nmodel net = onnx("m.onnx", output = "logit")\n  group older = age >= 40\n')
    model, group = m.decls
    assert isinstance(model, ast.ModelDecl)
    s = model.span
    assert (s.file, s.line, s.column, s.end_line, s.end_column) == ("t.fair", 3, 1, 3, 45)
    assert (model.name.id, model.name.span.line, model.name.span.column, model.name.span.end_column) == ("net", 3, 7, 10)
    assert (model.fmt.id, model.fmt.span.column) == ("onnx", 13)
    path, output = model.args
    assert path.kind == "pos" and isinstance(path.value, ast.Str) and path.value.value == "m.onnx"
    assert (path.value.span.column, path.value.span.end_column) == (18, 26)
    assert output.kind == "kw" and output.name.id == "output" and output.name.span.column == 28
    assert (group.span.line, group.span.column) == (4, 3)
    cmp = group.expr
    assert isinstance(cmp, ast.Compare) and cmp.op == ">="
    assert (cmp.span.column, cmp.span.end_column) == (17, 26)
    assert (cmp.left.span.column, cmp.right.span.column) == (17, 24)


def test_multiline_span():
    d = one("features F {\n  a : int in [0, 1]\n  b : bool\n}\n")
    assert (d.span.line, d.span.end_line) == (1, 4)
    a, b = d.features
    assert (a.span.line, a.span.column, a.span.end_column) == (2, 3, 20)
    assert (a.type.kind, a.type.lo, a.type.hi) == ("int", 0, 1)
    assert (b.type.kind, b.span.line) == ("bool", 3)


def test_spans_of_features_categories_and_modifiers():
    d = one('features F {\n  sex : {Female, "Male",} protected column "SEX"\n  n : real in [-1.5, 2e1] bins [0, 1]\n}')
    sex, n = d.features
    assert sex.protected and sex.column.value == "SEX" and sex.column.span.column == 44
    assert [c.value for c in sex.type.categories] == ["Female", "Male"]
    assert [c.span.column for c in sex.type.categories] == [10, 18]
    assert (n.type.kind, n.type.lo, n.type.hi) == ("real", -1.5, 20.0)
    assert n.bins == (0, 1) and n.bins_span.column == 27


# ------------------------------------------------------------------ literals

@pytest.mark.parametrize("text,seconds", [("500ms", 0.5), ("60s", 60.0), ("2min", 120.0), ("1.5h", 5400.0),
                                          ("0s", 0.0), ("0.25s", 0.25)])
def test_durations(text, seconds):
    p = one(f"property p {{ timeout = {text} }}")
    (st,) = p.stmts
    assert st.kind == "option"
    dur = st.args[1]
    assert isinstance(dur, ast.Dur) and dur.seconds == pytest.approx(seconds) and dur.text == text


def test_duration_needs_no_space_and_a_known_unit():
    p = one("property p { timeout = 60 s }")  # a number, then a name: two statements
    assert [s.kind for s in p.stmts] == ["option", "claim"]
    assert isinstance(p.stmts[0].args[1], ast.Num)


def test_numbers():
    e = claim("f(1, 2.5, 1e3, 7E-2, -4)")
    vals = [a.value for a in e.args]
    assert isinstance(vals[0], ast.Num) and vals[0].value == 1 and vals[0].is_int
    assert vals[1].value == 2.5 and not vals[1].is_int
    assert vals[2].value == 1000.0 and not vals[2].is_int
    assert vals[3].value == pytest.approx(0.07)
    assert isinstance(vals[4], ast.Neg) and vals[4].arg.value == 4


def test_categories_with_quotes_numbers_and_escapes():
    d = one(r'features F { c : {Private, "Self-emp-inc", "a \"quoted\" b", "tab\tx", "back\\slash", 3, -2, 1.5, "", "x y"} }')
    cats = [c.value for c in d.features[0].type.categories]
    assert cats == ["Private", "Self-emp-inc", 'a "quoted" b', "tab\tx", "back\\slash", "3", "-2", "1.5", "", "x y"]


def test_strings_unescape():
    m = one(r'model m = onnx("dir\\file \"q\".onnx")')
    assert m.args[0].value.value == 'dir\\file "q".onnx'


@pytest.mark.parametrize("text, escape, col", [(r'"x\u0000.fair"', "\\u", 10), (r'"..\data\p.csv"', "\\d", 11),
                                              (r'"ok\n then \q"', "\\q", 19)])
def test_an_unknown_string_escape_is_fs102_at_its_backslash(text, escape, col):
    d = syntax_error(f"import {text}")
    assert d.code == "FS102" and escape in d.message and (d.span.line, d.span.column) == (1, col), d
    assert (d.span.end_column - d.span.column) == 2


def test_the_known_escapes_still_read():
    m = one(r'model m = onnx("a\"b\\c\nd\te")')
    assert m.args[0].value.value == 'a"b\\c\nd\te'


@pytest.mark.parametrize("number", ["0.1234567890123456789", "123456789012345.678", "1.00000000000000001"])
def test_more_than_17_significant_digits_is_fs307_at_the_number(number):
    d = syntax_error(f"property p {{ x <= {number} }}")
    assert d.code == "FS307" and "significant digits" in d.message and (d.span.line, d.span.column) == (1, 19)
    assert d.span.end_column - d.span.column == len(number)


@pytest.mark.parametrize("number", ["1e-400", "1e-310", "0.0000000000000000000000000000000000000000000000000"
                                                           "00000000000000000000000000000000000000000000000000"
                                                           "00000000000000000000000000000000000000000000000000"
                                                           "00000000000000000000000000000000000000000000000000"
                                                           "00000000000000000000000000000000000000000000000000"
                                                           "00000000000000000000000000000000000000000000000000"
                                                           "00000000000000000000000000000000000000000000000000"
                                                           "1"])
def test_a_nonzero_number_a_float_reads_as_0_or_subnormal_is_fs307(number):
    d = syntax_error(f"property p {{ x <= {number} }}")
    assert d.code == "FS307" and "too close to 0" in d.message and d.span.column == 19


@pytest.mark.parametrize("number, value", [("0.123456789012345", 0.123456789012345), ("1.500000000000000000000", 1.5),
                                           ("0e-400", 0.0), ("1e-300", 1e-300), ("1000000000000000", 1e15),
                                           ("0.000000000000000000001", 1e-21)])
def test_numbers_within_15_digits_and_the_float_range_read(number, value):
    assert claim(f"x <= {number}").right.value == value


@pytest.mark.parametrize("text, word", [("1_0", "1_0"), ("0x10", "0x10"), ("1e", "1e"), ("2.5e+x", "2.5e"),
                                        ("1e5s", "1e5s"), ("60sec", "60sec"), ("3abc", "3abc")])
def test_a_number_run_into_a_name_is_one_fs101_at_the_literal(text, word):
    d = syntax_error(f"property p {{\n  x <= {text}\n}}")
    assert d.code == "FS101" and f"'{word}' is not a number" in d.message, d
    assert (d.span.line, d.span.column, d.span.end_column) == (2, 8, 8 + len(word))


def test_a_malformed_number_where_the_grammar_fails_is_still_named():
    d = syntax_error("features F { a : int in [0, 1_000] }")
    assert d.code == "FS101" and "'1_000' is not a number" in d.message and d.span.column == 29


def test_durations_names_strings_and_comments_with_digits_are_not_run_in_numbers():
    p = one('property p { x1_0 <= 2e-3 and y == "1_0" # 0x10\n  timeout = 1.5min  part_timeout = 60s }')
    assert [s.kind for s in p.stmts] == ["claim", "option", "option"]
    assert syntax_error('property p { y == "1_0 }').code == "FS102"  # the unclosed string is said, not 1_0


def test_booleans_none_and_literals():
    e = claim("f(true, false, none, [1, 2,], {a: 1, b: x}, {})")
    t, f, n, lst, mp, empty = [a.value for a in e.args]
    assert isinstance(t, ast.BoolLit) and t.value is True
    assert isinstance(f, ast.BoolLit) and f.value is False
    assert isinstance(n, ast.NoneLit)
    assert isinstance(lst, ast.ListLit) and len(lst.items) == 2
    assert isinstance(mp, ast.SetLit) and all(isinstance(i, ast.MapItem) for i in mp.items)
    assert [i.key.id for i in mp.items] == ["a", "b"]
    assert isinstance(empty, ast.SetLit) and empty.items == ()


# ------------------------------------------------------------------ groups and clauses

def test_compound_groups():
    e = claim("disparate_impact(m, groups sex x race x older) >= 0.8")
    assert isinstance(e, ast.Compare) and isinstance(e.left, ast.Call)
    g = e.left.keyword("groups")
    assert g.kind == "clause"
    assert isinstance(g.value, ast.Compound)
    assert [n.id for n in g.value.names] == ["sex", "race", "older"]
    assert [n.span.column for n in g.value.names] == [30, 36, 43]


def test_groups_as_keyword_argument_and_single_group():
    e = claim("statistical_parity(m, groups = sex, data = d) <= 0.1")
    g = e.left.keyword("groups")
    assert g.kind == "kw" and isinstance(g.value, ast.Name) and g.value.id == "sex"
    assert e.left.keyword("data").value.id == "d"
    assert [a.id for a in e.left.positional()] == ["m"]


def test_x_is_a_name_where_no_product_can_follow():
    d = one("features F { x : int in [0, 9]  y : bool }")
    assert [f.name.id for f in d.features] == ["x", "y"]
    g = one("group g = x >= 3")
    assert isinstance(g.expr.left, ast.Name) and g.expr.left.id == "x"
    assert isinstance(one("group h = xs x ys").expr, ast.Compound)


def test_all_clauses():
    e = claim("pba(m, flip sex, around adult, delta {age: 2}, given sex == F) >= 0.9")
    kinds = {a.name.id: a.kind for a in e.left.args if a.name}
    assert kinds == {"flip": "clause", "around": "clause", "delta": "clause", "given": "clause"}
    e = claim("path_specific(m, groups sex, mediators {a, b}, distribution = d) <= 0.1")
    assert e.left.keyword("mediators").kind == "clause" and e.left.keyword("distribution").kind == "kw"
    e = claim("k_discrimination(m, over {race, sex}, eps = 0.05) < 3")
    assert isinstance(e.left.keyword("over").value, ast.SetLit)


def test_trust_pickle():
    m = one('model lr = sklearn("m.pkl", trust pickle, score = prob)')
    trust = [a for a in m.args if a.kind == "trust"]
    assert len(trust) == 1 and trust[0].name.id == "pickle" and trust[0].value is None


# ------------------------------------------------------------------ pair properties

def test_equal_except_and_relaxations():
    p = one("""property fair {
  forall x, x' : Applicant
  require x.* == x'.* except {sex, race}
  require |x.age - x'.age| <= 5
  ensure label(m(x)) == label(m(x'))
  using milp
}""")
    kinds = [s.kind for s in p.stmts]
    assert kinds == ["forall", "require", "require", "ensure", "using"]
    v, v2, fs = p.stmts[0].args
    assert (v.id, v2.id, fs.id) == ("x", "x'", "Applicant")
    ee = p.stmts[1].args[0]
    assert isinstance(ee, ast.EqualExcept)
    assert isinstance(ee.left, ast.StarRef) and ee.left.var.id == "x" and ee.right.var.id == "x'"
    assert [n.id for n in ee.excluded.items] == ["sex", "race"]
    rel = p.stmts[2].args[0]
    assert isinstance(rel, ast.Compare) and isinstance(rel.left, ast.Abs)
    assert isinstance(rel.left.arg, ast.Arith) and rel.left.arg.op == "-"
    a = rel.left.arg.left
    assert isinstance(a, ast.Attr) and a.obj.id == "x" and a.name.id == "age"
    post = p.stmts[3].args[0]
    assert isinstance(post.left, ast.Call) and post.left.fn.id == "label"
    inner = post.left.args[0].value
    assert isinstance(inner, ast.Call) and inner.fn.id == "m" and inner.args[0].value.id == "x"
    assert p.stmts[4].args[0].id == "milp"


def test_equal_except_only_with_equals():
    d = syntax_error("property p {\n  forall x, x' : F\n  require x.* != x'.* except {sex}\n}")
    assert d.code == "FS101" and (d.span.line, d.span.column) == (3, 15)
    assert "x.* == x'.* except" in d.message
    assert d.hint


def test_precedence():
    e = one("group g = not a == 1 and b or c > 2 * 3 - -1").expr
    assert isinstance(e, ast.BoolOp) and e.op == "or"
    assert isinstance(e.left, ast.BoolOp) and e.left.op == "and"
    assert isinstance(e.left.left, ast.Not) and isinstance(e.left.left.arg, ast.Compare)
    right = e.right
    assert isinstance(right, ast.Compare) and right.op == ">"
    assert isinstance(right.right, ast.Arith) and right.right.op == "-"
    assert isinstance(right.right.left, ast.Arith) and right.right.left.op == "*"
    assert isinstance(right.right.right, ast.Neg)


def test_in_and_not_in():
    e = one("group g = race not in {A, \"B\"}").expr
    assert isinstance(e, ast.InSet) and e.negated and len(e.collection.items) == 2
    e = one("group g = race in {A}").expr
    assert isinstance(e, ast.InSet) and not e.negated


# ------------------------------------------------------------------ other declarations

def test_policy_and_apply():
    m = parse("""policy pol(m: model, g: groups, t: real = 0.8, n: int = 30,) {
  property a { disparate_impact(m, groups g) >= t }
  property b { statistical_parity(m, groups g) <= 1 - t }
}
apply pol(net, sex x race, n = 10) as mine
apply pol(net, g = sex)
""")
    pol, ap1, ap2 = m.decls
    assert [(p.name.id, p.type.id, p.default is not None) for p in pol.params] == [
        ("m", "model", False), ("g", "groups", False), ("t", "real", True), ("n", "int", True)]
    assert pol.params[2].default.value == 0.8
    assert [p.name.id for p in pol.properties] == ["a", "b"]
    assert ap1.alias.id == "mine" and ap2.alias is None
    assert [a.kind for a in ap1.args] == ["pos", "pos", "kw"]
    assert isinstance(ap1.args[1].value, ast.Compound)
    assert ap2.args[1].kind == "kw" and ap2.args[1].name.id == "g"


def test_encode_lines():
    d = one("""encode F for m {
  a, b : minmax
  c : minmax(lo = 0, hi = -1.5)
  d : code { Female = 0, "Male" = 1, 3 = 2, }
  e : standard(mean = 1, std = 2,)
}""")
    assert d.features.id == "F" and d.model.id == "m"
    l1, l2, l3, l4 = d.lines
    assert [n.id for n in l1.names] == ["a", "b"] and l1.kind.id == "minmax" and l1.params is None
    assert [(k.id, type(v).__name__) for k, v in l2.params] == [("lo", "Num"), ("hi", "Neg")]
    assert [(c.value, code) for c, code in l3.codes] == [("Female", 0), ("Male", 1), ("3", 2)]
    assert [k.id for k, _ in l4.params] == ["mean", "std"]


def test_distribution_table_and_call():
    m = parse("""distribution d = bayes(adult, max_parents = 2)
distribution t {
  p(member) = 0.4
  p(member | not smoker, sex = F, age = "18-25") = 0.5
}""")
    call, table = m.decls
    assert call.fn.id == "bayes" and call.entries == ()
    assert table.fn is None and len(table.entries) == 2
    e = table.entries[1]
    assert e.target.value is True and e.prob == 0.5
    assert [(g.feature.id, g.value) for g in e.given] == [("smoker", False), ("sex", "F"), ("age", "18-25")]


def test_repair_block():
    r = one('repair fix for net {\n goal passing_rate_ratio(groups sex) >= 0.8\n bound semantic_difference <= 1.2 * minimal\n'
            ' write "out.onnx"\n using smt\n timeout = 5min\n}')
    assert [s.kind for s in r.stmts] == ["goal", "bound", "write", "using", "option"]
    assert r.stmts[2].args[0].value == "out.onnx"


def test_search_explain_report_statements():
    p = one("property k {\n k_discrimination(m, over {sex}) < 2\n search annealing for 60s\n explain tree\n"
            " report by sex x race\n}")
    kinds = [s.kind for s in p.stmts]
    assert kinds == ["claim", "search", "explain", "report"]
    assert p.stmts[1].args[0].id == "annealing" and p.stmts[1].args[1].seconds == 60
    assert isinstance(p.stmts[3].args[0], ast.Compound)


def test_comments_and_blank_file():
    assert parse("").decls == ()
    assert parse("# only a comment\n\n   \n# another").decls == ()
    m = parse("group a = b # trailing\n# x\ngroup c = d")
    assert len(m.decls) == 2


# ------------------------------------------------------------------ syntax errors

def test_unexpected_token():
    d = syntax_error('model net onnx("m.onnx")')
    assert d.code == "FS101" and (d.span.line, d.span.column) == (1, 11)
    assert d.message == "unexpected 'onnx'; expected '='"


def test_unexpected_end_of_file():
    d = syntax_error("property p {\n  statistical_parity(m, groups sex) <= 0.2\n")
    assert d.code == "FS103" and "unexpected end of file" in d.message
    assert d.span.line == 2  # the last line of the file


def test_single_quote_hint():
    d = syntax_error("data d = csv('a.csv')")
    assert d.code == "FS102" and (d.span.line, d.span.column) == (1, 14)
    assert "double quotes" in d.hint


def test_unknown_character():
    d = syntax_error("group g = a $ b")
    assert d.code == "FS102" and d.span.column == 13 and "'$'" in d.message


def test_every_syntax_error_has_a_hint():
    for text in ["model", "group g = ", "features F { a : int in [0 }", "property p { forall x, y : F }",
                 "apply p(", "encode F for m { a : }", "}", "import x"]:
        d = syntax_error(text)
        assert d.code in ("FS101", "FS102", "FS103")
        assert d.hint and d.span is not None


def test_parse_file_encodings(tmp_path):
    p = tmp_path / "a.fair"
    p.write_bytes("group g = a\n".encode("utf-16"))
    with pytest.raises(DiagnosticError) as e:
        parse_file(p)
    assert e.value.diagnostics[0].code == "FS104" and "UTF-16" in e.value.diagnostics[0].message
    p.write_bytes(b"\xef\xbb\xbfgroup g = a\n")  # a UTF-8 byte-order mark is accepted
    (g,) = parse_file(p).decls
    assert g.span.column == 1 and g.expr.span.column == 11
    p.write_bytes(b"group g = a\ngroup h = \xff\n")
    with pytest.raises(DiagnosticError) as e:
        parse_file(p)
    d = e.value.diagnostics[0]
    assert d.code == "FS104" and (d.span.line, d.span.column) == (2, 11)
    with pytest.raises(DiagnosticError) as e:
        parse_file(tmp_path / "missing.fair")
    assert e.value.diagnostics[0].code == "FS203"


@pytest.mark.parametrize("end", [b"\r", b"\r\n", b"\n"])
def test_read_source_counts_lines_as_the_parser(tmp_path, end):
    """read_source's own FS104 (a byte that is not UTF-8) and FS102 (a NUL) count lines as the parser does:
    a lone \\r ends a line (LONE_CR), so in an old Mac file they are on line 3, not line 1 at column 30; and
    the column counts characters (the 'é' before the bad byte is one column, not two bytes)."""
    p = tmp_path / "s.fair"
    for bad, code in ((b"\xff", "FS104"), (b"\x00", "FS102")):
        p.write_bytes(end.join([b"group g = a", b"group h = b", "# é ".encode() + bad, b""]))
        with pytest.raises(DiagnosticError) as e:
            parse_file(p)
        d = e.value.diagnostics[0]
        assert d.code == code and (d.span.line, d.span.column) == (3, 5), (end, d)


def test_the_repr_of_any_float_is_a_number_a_spec_may_write():
    """A fitted scaler's mean written with repr (up to 17 significant digits) reads back as that
    float exactly: no FS307."""
    import random

    rnd = random.Random(7)
    for x in [0.1, 1 / 3, 4.128901098901098, 0.28232760016126046, 2.9032423999032937] + \
             [rnd.uniform(-1e3, 1e3) for _ in range(200)]:
        m = one(f"property p {{ x <= {x!r} }}")
        assert m is not None


@pytest.mark.parametrize("text,where", [("# a\x0c comment\ngroup g =\n", (2, 10)), ("group g =", (1, 10)),
                                        ("group g =\r\n", (1, 10)), ("group g =\n\n\n", (3, 1))])
def test_an_unexpected_end_of_file_is_at_the_line_the_parser_counts(text, where):
    """A form feed in a comment starts no line (str.splitlines would count one more)."""
    with pytest.raises(DiagnosticError) as e:
        parse_text(text, "s.fair")
    (d,) = e.value.diagnostics
    assert d.code == "FS103" and (d.span.line, d.span.column) == where


@pytest.mark.parametrize("number,read_as", [("0.23105857863000489", "0.2310585786300049"),
                                            ("0.30000000000000001", "0.3"), ("1.0000000000000001", "1.0")])
def test_a_16_or_17_digit_literal_that_is_not_its_floats_shortest_form_is_fs307(number, read_as):
    """A threshold is compared as written, and a parsed float is read back through its shortest repr:
    0.23105857863000489 would be compared as 0.2310585786300049, so a value between the two (the
    library's 0.231058578630004896...) was `holds (proved)` against a threshold it exceeds."""
    d = syntax_error(f"property p {{ x <= {number} }}")
    assert d.code == "FS307" and "not read exactly" in d.message and (d.span.line, d.span.column) == (1, 19)
    assert f"write {read_as}" in d.hint
    assert one(f"property p {{ x <= {read_as} }}") is not None
