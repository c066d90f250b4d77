"""The Python binding against include/visiontrain/visiontrain.h.

The binding mirrors the header by hand (visiontrain/_native.py PROTOTYPES, the IntEnums of
_core.py, _estimate.py, _validate.py and errors.py).  ctypes cannot check a prototype against
the library, so a wrong argtype or a renumbered enum would pass silently; here the header is
parsed (a small C declaration parser: the header is plain C, see its API rules) and every
function's return and parameter types and every enum member's value are compared with the
binding.  Each difference, and anything present on one side only, is named.
"""

import ctypes
import os
import re
import unittest

from vt_test_env import ROOT  # noqa: E402  (sets up the import paths first)

from visiontrain import _core, _estimate, _native, _validate, errors  # noqa: E402

HEADER = os.path.join(ROOT, "include", "visiontrain", "visiontrain.h")

# ---- the header ----------------------------------------------------------------------------

_BUILTIN_WORDS = {"void", "char", "short", "int", "long", "float", "double", "signed",
                  "unsigned", "_Bool"}
_QUALIFIERS = {"const", "volatile", "restrict", "struct", "enum"}


class CType:
    """A parameter or return type: base name ("char", "unsigned int", "vt_model") and one
    const flag per level, outermost (the base) first: `const char **` is
    CType("char", [True, False, False])."""

    def __init__(self, base, consts):
        self.base = base
        self.consts = consts

    @property
    def pointers(self):
        return len(self.consts) - 1

    def pointee(self):
        return CType(self.base, self.consts[:-1])

    def __str__(self):
        text = ("const " if self.consts[0] else "") + self.base + (" " if self.pointers else "")
        for const in self.consts[1:]:
            text += "*" + (" const " if const else "")
        return text.rstrip()


def _strip_comments_and_preprocessor(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"\\\n", " ", text)  # continued preprocessor lines
    return "\n".join(line for line in text.split("\n") if not line.lstrip().startswith("#"))


def _split_top(text, sep=","):
    """Split at `sep` outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts]


def parse_type(decl, named):
    """The type of a declaration (`const char *key`, `vt_dataset **`, `float x[]`); with
    `named`, a trailing identifier is the declared name and is dropped."""
    tokens = re.findall(r"[A-Za-z_]\w*|\*|\[[^\]]*\]", decl)
    arrays = []  # `float xywh[4]`: the name comes before the brackets; a parameter array is a pointer
    while tokens and tokens[-1].startswith("["):
        arrays.append(tokens.pop())
    if named and len(tokens) > 1 and re.match(r"[A-Za-z_]", tokens[-1]) \
            and tokens[-1] not in _BUILTIN_WORDS | _QUALIFIERS \
            and any(t not in _QUALIFIERS for t in tokens[:-1] if t != "*"):
        tokens = tokens[:-1]
    tokens += arrays
    words, consts = [], [False]
    for tok in tokens:
        if tok == "const":
            consts[-1] = True
        elif tok == "*" or tok.startswith("["):
            consts.append(False)
        elif tok not in _QUALIFIERS:
            words.append(tok)
    if not words:
        raise ValueError("no type in %r" % decl)
    base = " ".join(words)
    if base in ("unsigned", "signed"):
        base += " int"
    return CType(base, consts)


def parse_signature(text):
    """`RET NAME(PARAMS)` or a function pointer `RET (*NAME)(PARAMS)` -> (name, CType, [CType])."""
    text = text.strip()
    m = (re.fullmatch(r"(.*?)\(\s*\*\s*(\w+)\s*\)\s*\((.*)\)", text, re.S)
         or re.fullmatch(r"(.*?)\b(\w+)\s*\((.*)\)", text, re.S))
    if not m:
        raise ValueError("cannot parse declaration %r" % text)
    ret_text, name, params_text = m.groups()
    params = []
    if params_text.strip() not in ("", "void"):
        params = [parse_type(p, named=True) for p in _split_top(params_text)]
    return name, parse_type(ret_text, named=False), params


def _enum_value(expr, known):
    expr = expr.strip()
    if expr in known:
        return known[expr]
    return int(expr, 0)


def parse_header(path=HEADER):
    """-> (functions {name: (CType, [CType])}, enums {typedef: [(member, value)]},
    opaque struct typedefs, callback typedefs {name: (CType, [CType])}, macros {name: text})."""
    with open(path, encoding="utf-8") as f:
        raw = f.read()
    macros = dict(re.findall(r"^\s*#\s*define\s+(\w+)[ \t]+([^\n]*?)\s*$", raw, re.M))
    text = _strip_comments_and_preprocessor(raw)

    enums = {}
    for m in re.finditer(r"typedef\s+enum\s+\w*\s*\{(.*?)\}\s*(\w+)\s*;", text, re.S):
        members, known, nxt = [], {}, 0
        for item in _split_top(m.group(1)):
            if not item:
                continue
            name, _, value = item.partition("=")
            name = name.strip()
            value = _enum_value(value, known) if value.strip() else nxt
            members.append((name, value))
            known[name] = value
            nxt = value + 1
        enums[m.group(2)] = members

    opaque = set(re.findall(r"typedef\s+struct\s+\w+\s+(\w+)\s*;", text))
    callbacks = {}
    for m in re.finditer(r"typedef\s+([^;{}]*?\(\s*\*\s*\w+\s*\)\s*\([^;]*\))\s*;", text):
        name, ret, params = parse_signature(m.group(1))
        callbacks[name] = (ret, params)

    functions = {}
    for m in re.finditer(r"\bVT_API\b([^;]*);", text):
        name, ret, params = parse_signature(m.group(1))
        functions[name] = (ret, params)
    return functions, enums, opaque, callbacks, macros


# ---- C types -> the ctypes the binding uses (the one place that says how each maps) -------------

_SCALARS = {
    "void": None,
    "int": ctypes.c_int,
    "unsigned int": ctypes.c_uint,
    "float": ctypes.c_float,
    "double": ctypes.c_double,
    "size_t": ctypes.c_size_t,
    "int32_t": ctypes.c_int32,
    "int64_t": ctypes.c_int64,
    "uint8_t": ctypes.c_uint8,
    "uint64_t": ctypes.c_uint64,
}
_CALLBACKS = {"vt_log_fn": _native.LOG_FN, "vt_progress_fn": _native.PROGRESS_FN}


def expected_ctype(t, enums, opaque):
    """The ctypes type the binding must declare for C type `t`."""
    if t.pointers == 0:
        if t.base == "vt_status":
            return _native.c_status
        if t.base in enums:
            return _native.c_enum
        if t.base in _CALLBACKS:
            return _CALLBACKS[t.base]
        if t.base in _SCALARS:
            return _SCALARS[t.base]
        raise KeyError("no ctypes mapping for C type %r" % str(t))
    if t.pointers == 1 and t.base == "char":
        return _native.c_char_p  # strings in (const char *) and text buffers out (char *)
    if t.pointers == 1 and (t.base == "void" or t.base in opaque):
        return _native.c_void_p  # opaque handles, user pointers
    return ctypes.POINTER(expected_ctype(t.pointee(), enums, opaque))


def ctype_name(t):
    if t is None:
        return "None"
    for name, fn in _CALLBACKS.items():
        if t is fn:
            return name
    if hasattr(t, "contents"):  # a POINTER(...) class
        return "POINTER(%s)" % ctype_name(t._type_)
    return t.__name__


# ---- the binding's enums: C enum -> (Python names and values, prefix of the C names) ------------

def _members(obj):
    """{NAME: value} of an IntEnum or of a {name: value} table."""
    if isinstance(obj, dict):
        return {k.upper(): int(v) for k, v in obj.items()}
    return {m.name: int(m.value) for m in obj}


BOUND_ENUMS = {
    "vt_status": (errors.Status, ("VT_ERR_", "VT_")),
    "vt_log_level": (_core.LogLevel, ("VT_LOG_",)),
    "vt_task": (_core.Task, ("VT_TASK_",)),
    "vt_split": (_core.Split, ("VT_SPLIT_",)),
    "vt_option_type": (_core.OptionType, ("VT_OPTION_",)),
    "vt_option_scope": (_core.OptionScope, ("VT_SCOPE_",)),
    "vt_problem_code": (_core.ProblemCode, ("VT_PROBLEM_",)),
    "vt_count": (_validate.Count, ("VT_COUNT_",)),
    "vt_box_measure": (_core._BOX_MEASURES, ("VT_BOX_",)),
    "vt_metric": (_core.Metric, ("VT_METRIC_",)),
    "vt_event": (_core.Event, ("VT_EVENT_",)),
    "vt_stop_reason": (_core.StopReason, ("VT_STOP_",)),
    "vt_gpu_field": (_estimate.GpuField, ("VT_GPU_",)),
    "vt_est_result": (_estimate.EstResult, ("VT_EST_",)),
    "vt_est_precision": (_estimate.EstPrecision, ("VT_EST_PREC_",)),
    "vt_est_basis": (_estimate.EstBasis, ("VT_EST_BASIS_",)),
    "vt_est_pick": (_estimate.Pick, ("VT_PICK_",)),
    "vt_rank_by": (_estimate.RankBy, ("VT_RANK_",)),
    "vt_export_format": (_core.ExportFormat, ("VT_EXPORT_",)),
}
# Enums the binding does not mirror, and why.
UNBOUND_ENUMS = {
    "vt_option": "options are looked up by key at run time (vt_option_next, vt_option_info)",
}
# Single values the binding copies from the header.
BOUND_CONSTANTS = {
    "_native.ABI_VERSION": (_native.ABI_VERSION, "VT_ABI_VERSION"),
    "_core._OPT_IMGSZ": (_core._OPT_IMGSZ, "VT_OPT_IMGSZ"),
    # the first vt_model_create() option
    "_core._MODEL_OPTIONS_FROM": (_core._MODEL_OPTIONS_FROM, "VT_OPT_CHANNELS"),
}


def _python_name(c_name, prefixes):
    for prefix in prefixes:
        if c_name.startswith(prefix):
            return c_name[len(prefix):]
    return c_name


# ---- the comparisons (each returns a list of differences, so a test can name them all) --------

def function_drift(functions, enums, opaque, prototypes):
    problems = []
    for name in sorted(set(functions) - set(prototypes)):
        problems.append("%s: declared in the header, missing from PROTOTYPES" % name)
    for name in sorted(set(prototypes) - set(functions)):
        problems.append("%s: in PROTOTYPES, not declared in the header" % name)
    for name in sorted(set(functions) & set(prototypes)):
        c_ret, c_params = functions[name]
        py_ret, py_args = prototypes[name]
        want = expected_ctype(c_ret, enums, opaque)
        if py_ret is not want:
            problems.append("%s: returns %s (ctypes %s), PROTOTYPES says %s"
                            % (name, c_ret, ctype_name(want), ctype_name(py_ret)))
        if len(py_args) != len(c_params):
            problems.append("%s: %d parameters in the header, %d argtypes in PROTOTYPES"
                            % (name, len(c_params), len(py_args)))
        for i, (c_param, py_arg) in enumerate(zip(c_params, py_args)):
            want = expected_ctype(c_param, enums, opaque)
            if py_arg is not want:
                problems.append("%s: parameter %d is %s (ctypes %s), PROTOTYPES says %s"
                                % (name, i + 1, c_param, ctype_name(want), ctype_name(py_arg)))
    return problems


def callback_drift(callbacks, enums, opaque):
    problems = []
    for name in sorted(set(callbacks) ^ set(_CALLBACKS)):
        side = "the header" if name in callbacks else "the binding's callback table"
        problems.append("callback type %s: only in %s" % (name, side))
    for name in sorted(set(callbacks) & set(_CALLBACKS)):
        c_ret, c_params = callbacks[name]
        fn = _CALLBACKS[name]
        want = [expected_ctype(p, enums, opaque) for p in c_params]
        if fn._restype_ is not expected_ctype(c_ret, enums, opaque) \
                or list(fn._argtypes_) != want:
            problems.append("callback type %s: header (%s) -> %s, binding (%s) -> %s" % (
                name, ", ".join(ctype_name(t) for t in want),
                ctype_name(expected_ctype(c_ret, enums, opaque)),
                ", ".join(ctype_name(t) for t in fn._argtypes_), ctype_name(fn._restype_)))
    return problems


def enum_drift(enums, bound, unbound):
    problems = []
    for name in sorted(set(enums) - set(bound) - set(unbound)):
        problems.append("enum %s: in the header, not mirrored by the binding (add it to "
                        "BOUND_ENUMS, or to UNBOUND_ENUMS with the reason)" % name)
    for name in sorted((set(bound) | set(unbound)) - set(enums)):
        problems.append("enum %s: listed here, not in the header" % name)
    for name in sorted(set(enums) & set(bound)):
        py_obj, prefixes = bound[name]
        c_members = {_python_name(m, prefixes): (m, v) for m, v in enums[name]}
        py_members = _members(py_obj)
        for key in sorted(set(c_members) - set(py_members)):
            problems.append("%s: %s = %d missing from the binding"
                            % (name, c_members[key][0], c_members[key][1]))
        for key in sorted(set(py_members) - set(c_members)):
            problems.append("%s: the binding's %s = %d is not in the header"
                            % (name, key, py_members[key]))
        for key in sorted(set(c_members) & set(py_members)):
            c_name, c_value = c_members[key]
            if py_members[key] != c_value:
                problems.append("%s: %s is %d in the header, the binding's %s is %d"
                                % (name, c_name, c_value, key, py_members[key]))
    return problems


def constant_drift(enums, macros, constants):
    values = {m: v for members in enums.values() for m, v in members}
    for name, text in macros.items():
        if re.fullmatch(r"-?\d+", text):
            values[name] = int(text)
    problems = []
    for py_name, (py_value, c_name) in sorted(constants.items()):
        if c_name not in values:
            problems.append("%s copies %s, which the header does not define" % (py_name, c_name))
        elif py_value != values[c_name]:
            problems.append("%s is %r, the header's %s is %d"
                            % (py_name, py_value, c_name, values[c_name]))
    return problems


class HeaderDriftTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.functions, cls.enums, cls.opaque, cls.callbacks, cls.macros = parse_header()

    def assertNoDrift(self, problems):
        if problems:
            self.fail("the binding differs from %s:\n  %s"
                      % (os.path.relpath(HEADER, ROOT), "\n  ".join(problems)))

    def test_parser_sees_the_header(self):
        # guards against a parser that silently finds nothing
        self.assertGreater(len(self.functions), 100)
        self.assertGreater(len(self.enums), 10)
        self.assertIn("vt_model", self.opaque)
        ret, params = self.functions["vt_option_info"]
        self.assertEqual(str(ret), "vt_status")
        self.assertEqual([str(p) for p in params],
                         ["vt_option", "const char **", "vt_option_type *", "double *",
                          "double *", "const char **"])
        self.assertEqual(self.functions["vt_version"][1], [])
        self.assertIn(("VT_ERR_NUMERIC", 17), self.enums["vt_status"])

    def test_functions(self):
        self.assertNoDrift(function_drift(self.functions, self.enums, self.opaque,
                                          _native.PROTOTYPES))

    def test_callback_types(self):
        self.assertNoDrift(callback_drift(self.callbacks, self.enums, self.opaque))

    def test_enums(self):
        self.assertNoDrift(enum_drift(self.enums, BOUND_ENUMS, UNBOUND_ENUMS))

    def test_constants(self):
        self.assertNoDrift(constant_drift(self.enums, self.macros, BOUND_CONSTANTS))

    def test_drift_is_reported(self):
        # The comparisons themselves: an altered argtype, a missing argument, a renumbered and
        # a missing enum member must each be named.
        protos = dict(_native.PROTOTYPES)
        ret, args = protos["vt_model_flops"]
        protos["vt_model_flops"] = (ret, [args[0], ctypes.c_double])
        ret, args = protos["vt_dataset_open"]
        protos["vt_dataset_open"] = (ret, args[:-1])
        del protos["vt_last_error"]
        problems = function_drift(self.functions, self.enums, self.opaque, protos)
        self.assertEqual(len(problems), 3, problems)
        self.assertIn("vt_model_flops: parameter 2 is int", problems[-1])
        self.assertIn("vt_dataset_open: 3 parameters", "\n".join(problems))
        self.assertIn("vt_last_error: declared in the header", problems[0])

        bound = dict(BOUND_ENUMS)
        tasks = {k: v for k, v in _members(_core.Task).items() if k != "SEGMENT"}
        tasks["DETECT"] = 3   # the binding's Task less SEGMENT, DETECT renumbered
        bound["vt_task"] = (tasks, ("VT_TASK_",))
        problems = enum_drift(self.enums, bound, UNBOUND_ENUMS)
        self.assertEqual(problems, [
            "vt_task: VT_TASK_SEGMENT = 3 missing from the binding",
            "vt_task: VT_TASK_DETECT is 2 in the header, the binding's DETECT is 3"])


if __name__ == "__main__":
    unittest.main()
