"""The rule language: JSON Logic (jsonlogic.com), as json-logic-js runs it.

A form's conditions, jumps and variables are JSON Logic. The hosted page's
script runs them with json-logic-js (plus our extra operators, added with
its `add_operation`); this module runs them on the server, which decides.
The two must agree on every rule a form can hold, so this evaluator follows
json-logic-js's JavaScript semantics (loose `==`, `+` by parseFloat, truthy
empty lists being false, strings compared by UTF-16 code units) for the
operators we accept, and `tests/language/test_logic_parity.py` runs the same
rules and data through both.

Why our own: the Python evaluators on PyPI either stopped in 2018-2021 or
differ from json-logic-js where forms care (Python's `%` and division by
zero, `===` between true and 1, number-to-text), and a form's rules are a
small, closed set: no loops (`map`, `reduce`, `filter`, `all`, `some`,
`none` are not accepted), so a rule's cost is its size, bounded on save.

Rule data: answers by block key (a multiple-choice answer as the list of
chosen values, so `in` tests membership), hidden fields by key, variables
under `vars`. A missing answer is absent, so `var` gives its default.
"""

import functools
import math
import re
from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

import re2  # type: ignore[import-untyped]

Json = Any  # null, bool, number, string or list of them; objects only in rules
NAN = float("nan")

# JavaScript's String.prototype.trim and Number() treat these as blank.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"  # noqa: E501
_DECIMAL = re.compile(r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")
_RADIX = re.compile(r"0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+")


def _index(text: str) -> bool:
    """A list index as JavaScript reads a property name: 0, 1, 12 (not 01, not ²)."""
    return text.isascii() and text.isdigit() and len(text) < 10 and str(int(text)) == text


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def to_number(value: Json) -> float | int:
    """JavaScript's Number(value)."""
    if value is None:
        return 0
    if isinstance(value, bool):
        return int(value)
    if _is_number(value):
        return value  # type: ignore[no-any-return]
    if isinstance(value, list):
        return to_number(to_string(value))
    if isinstance(value, str):
        return _text_number(value) if len(value) <= _LONG else _long_text_number(value)
    return NAN


def _text_number(value: str) -> float | int:
    text = value.strip(_JS_SPACE)
    if not text:
        return 0
    if _RADIX.fullmatch(text):
        return _as_double(int(text, 0))
    if _DECIMAL.fullmatch(text):
        return _decimal(text)
    return NAN


def parse_float(value: Json) -> float | int:
    """JavaScript's parseFloat(value): the longest number at the start."""
    if _is_number(value):
        return value  # type: ignore[no-any-return]  # its own text reads back as itself
    text = to_string(value)
    return _float_start(text) if len(text) <= _LONG else _long_float_start(text)


def _float_start(value: str) -> float | int:
    found = _DECIMAL.match(value.lstrip(_JS_SPACE))  # parseFloat takes the longest such start
    return _decimal(found.group()) if found else NAN


# A long answer is read as a number once, however many parts of a form's
# rules read it: a scan of 100,000 digits took a third of a millisecond.
# Only long ones are kept, and few: the strings themselves stay in memory.
_LONG = 1000
_long_text_number = functools.lru_cache(maxsize=16)(_text_number)
_long_float_start = functools.lru_cache(maxsize=16)(_float_start)

# A double's nearest value is decided by a decimal's first 768 significant
# digits and whether any digit after them is not 0 (a "sticky" 1 stands in).
_SIGNIFICANT = 768


def _decimal(literal: str) -> float | int:
    """The value of a _DECIMAL match, its digits cut to what decides the
    nearest double (float() of 100,000 digits takes a sixth of a ms)."""
    if len(literal) > _SIGNIFICANT + 30:
        literal = _significant(literal)
    number = float(literal.replace("Infinity", "inf"))
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def _significant(literal: str) -> str:
    """The same number written with at most _SIGNIFICANT digits (and a sticky one)."""
    sign = literal[0] if literal[0] in "+-" else ""
    mantissa, _, exponent_text = literal.lstrip("+-").replace("E", "e").partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    if not digits:
        return f"{sign}0"
    # The value is 0.<digits> times ten to the power of point + exponent.
    point = len(whole.lstrip("0")) or len(fraction.lstrip("0")) - len(fraction)
    exponent = exponent_text.lstrip("+-").lstrip("0")
    # Past 10^7 the number is 0 or infinite, whatever its digits say.
    power = int(exponent or "0") if len(exponent) <= 7 else 10**7
    power = point + (-power if exponent_text.startswith("-") else power)
    if len(digits) > _SIGNIFICANT:
        digits = digits[:_SIGNIFICANT] + ("1" if digits[_SIGNIFICANT:].strip("0") else "")
    return f"{sign}0.{digits}e{power}"


def _number_text(number: float | int) -> str:
    """JavaScript's Number.prototype.toString()."""
    if isinstance(number, int):
        if abs(number) < 10**21:
            return str(number)
        number = float(number)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "0"
    digits, n = _shortest(abs(number))
    sign = "-" if number < 0 else ""
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{mantissa}e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"


def _shortest(number: float) -> tuple[str, int]:
    """The shortest digits that read back as `number` (> 0), and where the
    decimal point goes after them, as ECMA-262's Number::toString counts."""
    mantissa, _, exponent = repr(number).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + int(exponent or 0)
    significant = digits.lstrip("0")
    point -= len(digits) - len(significant)
    return significant.rstrip("0") or "0", point


def to_string(value: Json) -> str:
    """JavaScript's String(value)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if _is_number(value):
        return _number_text(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        try:
            return ",".join(value)  # a list answer's values: text, joined in C
        except TypeError:
            return ",".join("" if item is None else to_string(item) for item in value)
    return "[object Object]"


def truthy(value: Json) -> bool:
    """json-logic-js's truthy: JavaScript's, except that [] is false."""
    if isinstance(value, list):
        return bool(value)
    if _is_number(value):
        return not (value == 0 or math.isnan(value))
    return bool(value)


def _primitive(value: Json) -> Json:
    return to_string(value) if isinstance(value, list) else value


def loose_equals(a: Json, b: Json) -> bool:
    """JavaScript's ==, for JSON values."""
    if isinstance(a, list) and isinstance(b, list):
        return a is b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool):
        return loose_equals(int(a), b)
    if isinstance(b, bool):
        return loose_equals(a, int(b))
    a, b = _primitive(a), _primitive(b)
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return to_number(a) == to_number(b)


def strict_equals(a: Json, b: Json) -> bool:
    """JavaScript's ===, for JSON values."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if _is_number(a) and _is_number(b):
        return a == b  # type: ignore[no-any-return]
    if isinstance(a, list) or isinstance(b, list):
        return a is b
    return type(a) is type(b) and a == b


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def _less(a: Json, b: Json, *, or_equal: bool) -> bool:
    """JavaScript's < and <=: text with text by UTF-16 code units, else numbers."""
    a, b = _primitive(a), _primitive(b)
    if isinstance(a, str) and isinstance(b, str):
        if a.isascii() and b.isascii():  # code points and code units agree
            return a <= b if or_equal else a < b
        x16, y16 = _utf16(a), _utf16(b)
        return x16 <= y16 if or_equal else x16 < y16
    x, y = to_number(a), to_number(b)
    return x <= y if or_equal else x < y  # NaN: false either way


def _between(test: Callable[[Json, Json], bool]) -> Callable[..., bool]:
    """json-logic-js's < and <=: with a third argument, "between"."""

    def compare(*args: Json) -> bool:
        a, b, c = (*args, None, None)[:3]
        return test(a, b) and test(b, c) if len(args) > 2 else test(a, b)

    return compare


def _js_remainder(a: Json, b: Json) -> float | int:
    x, y = to_number(a), to_number(b)
    if math.isnan(x) or math.isnan(y) or math.isinf(x) or y == 0:
        return NAN
    if math.isinf(y):
        return x
    result = math.fmod(x, y)
    return int(result) if isinstance(x, int) and isinstance(y, int) else result


def _js_divide(a: Json, b: Json) -> float | int:
    x, y = to_number(a), to_number(b)
    if y == 0:
        if x == 0 or math.isnan(x):
            return NAN
        return math.copysign(math.inf, x) * math.copysign(1, y)
    result = x / y
    return int(result) if result.is_integer() and abs(result) < 2**53 else result


def _as_double(value: int) -> float | int:
    """An int as JavaScript holds it: exact below 2^53, else the nearest double."""
    if abs(value) < 2**53:
        return value
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _number(value: float | int) -> float | int:
    """Whole floats as ints, so 2.0 reads back as 2 in JSON (as in JavaScript);
    ints past 2^53 as doubles, as JavaScript has no others."""
    if isinstance(value, int):
        return _as_double(value)
    if value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def _add(*args: Json) -> float | int:
    total: float | int = 0
    for arg in args:
        total += parse_float(arg)
    return _number(total)


def _multiply(*args: Json) -> float | int:
    if not args:
        return 1  # json-logic-js reduces without a start: its * of nothing is undefined
    product: float | int = parse_float(args[0])
    for arg in args[1:]:
        product *= parse_float(arg)
    return _number(product)


def _subtract(*args: Json) -> float | int:
    a, b = (*args, None, None)[:2]
    if len(args) < 2:
        return _number(-to_number(a))
    return _number(to_number(a) - to_number(b))


def _extreme(pick: Callable[[list[float | int]], float | int]) -> Callable[..., float | int]:
    def extreme(*args: Json) -> float | int:
        numbers = [to_number(arg) for arg in args]
        if not numbers:
            return -math.inf if pick is max else math.inf
        if any(math.isnan(n) for n in numbers):
            return NAN
        return pick(numbers)

    return extreme


def _in(needle: Json = None, haystack: Json = None, *more: Json) -> bool:
    if isinstance(haystack, list):
        if isinstance(needle, str):  # text equals only the same text: found in C
            return needle in haystack
        return any(strict_equals(needle, item) for item in haystack)
    if isinstance(haystack, str) and haystack:
        return to_string(needle) in haystack
    return False


def _cat(*args: Json) -> str:
    """json-logic-js joins its arguments (null is empty there); cut at
    TEXT_READ_MAX characters, as our operator on the hosted page cuts it
    (nothing past it is joined: long answers cost no more than short ones)."""
    texts, size = [], 0
    for arg in args:
        if size >= TEXT_READ_MAX:
            break
        text = "" if arg is None else to_string(arg)[:TEXT_READ_MAX]
        texts.append(text)
        size += len(text)
    return "".join(texts)[:TEXT_READ_MAX]


def _length(value: Json = None, *more: Json) -> int:
    """Characters (code points) of text, items of a list; 0 for nothing."""
    if value is None:
        return 0
    if isinstance(value, list):
        return len(value)
    return len(to_string(value))


_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _as_date(value: Json) -> date | None:
    """A date from text starting YYYY-MM-DD (a date-time's day too)."""
    if isinstance(value, str) and _DATE.fullmatch(value[:10]):
        try:
            return date.fromisoformat(value[:10])
        except ValueError:
            return None
    return None


def _add_days(day: Json = None, days: Json = None, *more: Json) -> str | None:
    start, count = _as_date(day), to_number(days)
    if start is None or math.isnan(count) or math.isinf(count):
        return None
    try:
        return (start + timedelta(days=math.trunc(count))).isoformat()
    except OverflowError:
        return None


def _days_between(first: Json = None, second: Json = None, *more: Json) -> int | None:
    a, b = _as_date(first), _as_date(second)
    return None if a is None or b is None else (b - a).days


class Context:
    """What a rule reads: the data, and the day `today` answers (the
    service's clock, so tests move it as they move every clock)."""

    __slots__ = ("data", "patterns", "today")

    def __init__(self, data: dict[str, Json], today: date) -> None:
        self.data = data
        self.today = today
        self.patterns: dict[str, Any] = {}

    def var(self, path: Json = None, default: Json = None, *more: Json) -> Json:
        if path is None or path == "" or (isinstance(path, list) and not path):
            return self.data
        value: Json = self.data
        for part in to_string(path).split("."):
            if isinstance(value, dict):
                if part not in value:
                    return default
                value = value[part]
            elif isinstance(value, list | str) and _index(part):
                index = int(part)
                if index >= len(value):
                    return default
                value = value[index]
            elif isinstance(value, list | str) and part == "length":
                value = (
                    len(value)
                    if isinstance(value, list) or value.isascii()
                    else len(_utf16(value)) // 2
                )
            else:
                return default
        return value

    def missing(self, *args: Json) -> list[Json]:
        keys = args[0] if args and isinstance(args[0], list) else list(args)
        return [key for key in keys if self.var(key) in (None, "")]

    def missing_some(self, need: Json = None, keys: Json = None, *more: Json) -> list[Json]:
        keys = keys if isinstance(keys, list) else []
        gone = self.missing(keys)
        return [] if len(keys) - len(gone) >= to_number(need) else gone

    def match(self, text: Json = None, pattern: Json = None, *more: Json) -> bool:
        if text is None or not isinstance(pattern, str):
            return False
        compiled = self.patterns.get(pattern)
        if compiled is None:
            compiled = self.patterns[pattern] = compile_pattern(pattern)
        return compiled.search(to_string(text)[:TEXT_READ_MAX]) is not None


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> Any:
    """RE2: its time is linear in the text, whatever the pattern. Compiled
    once for every answer checked against it (a pattern is at most 500
    characters)."""
    options = re2.Options()
    options.max_mem = 1 << 20
    options.log_errors = False
    return re2.compile(pattern, options)


# Operators whose arguments are all evaluated first; `if`, `and`, `or` and
# the context's own are handled in apply.
OPERATIONS: dict[str, Callable[..., Json]] = {
    "==": lambda a=None, b=None, *_: loose_equals(a, b),
    "!=": lambda a=None, b=None, *_: not loose_equals(a, b),
    "===": lambda a=None, b=None, *_: strict_equals(a, b),
    "!==": lambda a=None, b=None, *_: not strict_equals(a, b),
    "<": _between(lambda a, b: _less(a, b, or_equal=False)),
    "<=": _between(lambda a, b: _less(a, b, or_equal=True)),
    ">": lambda a=None, b=None, *_: _less(b, a, or_equal=False),
    ">=": lambda a=None, b=None, *_: _less(b, a, or_equal=True),
    "!": lambda a=None, *_: not truthy(a),
    "!!": lambda a=None, *_: truthy(a),
    "+": _add,
    "-": _subtract,
    "*": _multiply,
    "/": lambda a=None, b=None, *_: _js_divide(a, b),
    "%": lambda a=None, b=None, *_: _js_remainder(a, b),
    "min": _extreme(min),
    "max": _extreme(max),
    "in": _in,
    "cat": _cat,
    # Ours (documented in the README's rule language; added to json-logic-js
    # on the hosted page with the same meaning).
    "length": _length,
    "add_days": _add_days,
    "days_between": _days_between,
}
CONTEXT_OPERATIONS = ("var", "missing", "missing_some", "match")
SPECIAL = ("if", "?:", "and", "or")
# Every operator a rule may use.
OPERATORS = frozenset((*OPERATIONS, *CONTEXT_OPERATIONS, *SPECIAL, "today"))


def reads_variables(rule: Json) -> bool:
    """Whether the rule reads a variable (a path under `vars`)."""
    if isinstance(rule, list):
        return any(reads_variables(item) for item in rule)
    if isinstance(rule, dict):
        for operator, raw in rule.items():
            names = raw if isinstance(raw, list) else [raw]
            if operator in ("var", "missing", "missing_some") and any(
                isinstance(name, str) and (name == "vars" or name.startswith("vars."))
                for name in (
                    names[1]
                    if operator == "missing_some" and len(names) > 1 and isinstance(names[1], list)
                    else names
                )
            ):
                return True
            if reads_variables(raw):
                return True
    return False


def names_read(rule: Json) -> set[str]:
    """The names the rule reads (`var`, `missing`, `missing_some`), as written."""
    found: set[str] = set()
    pending = [rule]
    while pending:
        node = pending.pop()
        if isinstance(node, list):
            pending += node
        elif isinstance(node, dict):
            for operator, raw in node.items():
                args = raw if isinstance(raw, list) else [raw]
                names: list[Json] = []
                if operator == "var":
                    names = args[:1]
                elif operator == "missing":
                    names = args[0] if args and isinstance(args[0], list) else args
                elif operator == "missing_some" and len(args) > 1 and isinstance(args[1], list):
                    names = args[1]
                found.update(name for name in names if isinstance(name, str))
                pending += args
    return found


def apply(rule: Json, context: Context) -> Json:
    """The rule's value. Rules are checked on save (logic_check), so every
    operator here is known and every rule is small."""
    if isinstance(rule, list):
        return [apply(item, context) for item in rule]
    if not isinstance(rule, dict) or len(rule) != 1:
        return rule
    ((operator, raw),) = rule.items()
    args = raw if isinstance(raw, list) else [raw]
    if operator in ("if", "?:"):
        index = 0
        while index < len(args) - 1:
            if truthy(apply(args[index], context)):
                return apply(args[index + 1], context)
            index += 2
        return apply(args[index], context) if index == len(args) - 1 else None
    if operator in ("and", "or"):
        current: Json = None
        for arg in args:
            current = apply(arg, context)
            if truthy(current) is (operator == "or"):
                return current
        return current
    values = [apply(arg, context) for arg in args]
    if operator == "today":
        return context.today.isoformat()
    if operator in CONTEXT_OPERATIONS:
        return getattr(context, operator)(*values)
    return OPERATIONS[operator](*values)


# Checking a rule on save.

MAX_DEPTH = 20
MAX_NODES = 1000
MAX_PATTERN = 500
MAX_REPEAT = 100  # the largest {n} a pattern may count
MAX_MATCHES = 20  # `match` operators in one form's rules
TEXT_READ_MAX = 10_000  # characters `match` reads, and `cat` makes

# Argument counts: (fewest, most or None).
ARITY: dict[str, tuple[int, int | None]] = {
    "==": (2, 2), "!=": (2, 2), "===": (2, 2), "!==": (2, 2),
    "<": (2, 3), "<=": (2, 3), ">": (2, 2), ">=": (2, 2),
    "!": (1, 1), "!!": (1, 1),
    "+": (1, None), "*": (2, None), "-": (1, 2), "/": (2, 2), "%": (2, 2),
    "min": (1, None), "max": (1, None),
    "in": (2, 2), "cat": (1, None),
    "var": (1, 2), "missing": (1, None), "missing_some": (2, 2),
    "if": (2, None), "?:": (2, None), "and": (1, None), "or": (1, None),
    "length": (1, 1), "match": (2, 2), "today": (0, 0),
    "add_days": (2, 2), "days_between": (2, 2),
}  # fmt: skip
COMPARISONS = frozenset(("==", "!=", "===", "!==", "<", "<=", ">", ">="))
_TYPE_OF = {
    **dict.fromkeys(("+", "-", "*", "/", "%", "min", "max", "length", "days_between"), "number"),
    **dict.fromkeys(("cat", "today", "add_days"), "text"),
    **dict.fromkeys(("!", "!!", "in", "match", *COMPARISONS), "boolean"),
    **dict.fromkeys(("missing", "missing_some"), "list"),
}


class Name:
    """Something a rule can read: its type (number, text or list), where it
    is in the form (None: everywhere, as hidden fields and variables are),
    and for a choice, its option values."""

    __slots__ = ("kind", "label", "options", "position")

    def __init__(
        self,
        kind: str,
        position: int | None = None,
        options: tuple[str, ...] | None = None,
        label: str = "",
    ) -> None:
        self.kind = kind
        self.position = position
        self.options = options
        self.label = label


class Checker:
    """Finds what is wrong with one rule: (JSON pointer, problem) pairs.

    `names` are what the rule may read; `before` the position it may read
    up to (a block's rule reads blocks before it, not itself or later)."""

    def __init__(self, names: dict[str, Name], before: int | None, where: str) -> None:
        self.names = names
        self.before = before
        self.where = where
        self.errors: list[tuple[str, str]] = []
        self.nodes = 0
        self.too_deep = False
        self.matches = 0  # `match` operators: a form's are counted (MAX_MATCHES)
        self.read: set[str] = set()

    def check(self, rule: Json, pointer: str) -> list[tuple[str, str]]:
        self._node(rule, pointer, 1)
        if self.nodes > MAX_NODES and not self.too_deep:
            self.errors = [(pointer, f"has more than {MAX_NODES:,} parts; split it up")]
        return self.errors

    def _fail(self, pointer: str, problem: str) -> None:
        if len(self.errors) < 20:
            self.errors.append((pointer, problem))

    def _node(self, node: Json, pointer: str, depth: int) -> str:
        """Checks the node; its type: number, text, boolean, list or any."""
        self.nodes += 1
        if self.nodes > MAX_NODES:
            return "any"
        if depth > MAX_DEPTH:
            self._fail(pointer, f"nests deeper than {MAX_DEPTH} levels")
            self.too_deep = True
            self.nodes = MAX_NODES + 1  # nothing below is looked at
            return "any"
        if isinstance(node, list):
            for index, item in enumerate(node):
                self._node(item, f"{pointer}/{index}", depth + 1)
            return "list"
        if isinstance(node, dict):
            return self._operation(node, pointer, depth)
        if isinstance(node, bool):
            return "boolean"
        if _is_number(node):
            if not math.isfinite(node) or abs(node) > 2**53:
                self._fail(pointer, "must be a number of at most 2^53 (as JavaScript keeps exact)")
            return "number"
        if isinstance(node, str):
            return "text"
        return "any"  # null

    def _operation(self, node: dict[str, Json], pointer: str, depth: int) -> str:
        if len(node) != 1:
            self._fail(pointer, "is not a rule: a rule is an object with exactly one operator")
            return "any"
        ((operator, raw),) = node.items()
        here = f"{pointer}/{_escape(operator)}"
        if operator not in ARITY:
            self._fail(
                here, f"uses the unknown operator {operator!r}; see the README's rule language"
            )
            return "any"
        args = raw if isinstance(raw, list) else [raw]
        listed = isinstance(raw, list)

        def at(index: int) -> str:
            return f"{here}/{index}" if listed else here

        fewest, most = ARITY[operator]
        if len(args) < fewest or (most is not None and len(args) > most):
            count = (
                str(fewest)
                if fewest == most
                else (f"{fewest} or more" if most is None else f"{fewest} to {most}")
            )
            self._fail(here, f"{operator!r} takes {count} arguments, not {len(args)}")
            return "any"
        if operator == "var":
            return self._var(args, at, depth)
        if operator in ("missing", "missing_some"):
            keys = (
                args[1]
                if operator == "missing_some"
                else (args[0] if isinstance(args[0], list) else args)
            )
            names: list[Json] = keys if isinstance(keys, list) else [keys]
            for index, key in enumerate(names):
                self._name(key, f"{at(1 if operator == 'missing_some' else 0)}/{index}")
            self.nodes += len(names)
            return "list"
        if operator == "match":
            self.matches += 1
            self._node(args[0], at(0), depth + 1)
            self._pattern(args[1], at(1))
            return "boolean"
        kinds = [self._node(arg, at(index), depth + 1) for index, arg in enumerate(args)]
        if operator in COMPARISONS:
            self._comparable(args, kinds, here)
        elif operator == "in":
            self._membership(args, kinds, here)
        return _TYPE_OF.get(operator, "any")

    def _var(self, args: list[Json], at: Callable[[int], str], depth: int) -> str:
        if len(args) == 2:
            self._node(args[1], at(1), depth + 1)
        name = self._name(args[0], at(0))
        return name.kind if name else "any"

    def _name(self, path: Json, pointer: str) -> Name | None:
        if not isinstance(path, str) or not path:
            self._fail(pointer, "must name an answer, hidden field or variable, written out")
            return None
        name = self.names.get(path)
        head, _, rest = path.partition(".")
        # An item of a list answer (ranking.0: the first ranked), or its length.
        item = rest == "length" or _index(rest)
        if name is None and item and head in self.names and self.names[head].kind == "list":
            listed = self.names[head]
            kind = "number" if rest == "length" else "text"
            name = Name(kind, listed.position, listed.options, listed.label)
            path = head
        if name is None:
            self._fail(pointer, f"refers to {path!r}, which this form does not have")
            return None
        if self.before is not None and name.position is not None and name.position >= self.before:
            self._fail(pointer, f"refers to {path!r}, which comes after {self.where}")
        self.read.add(path)
        return name

    def _pattern(self, pattern: Json, pointer: str) -> None:
        problem = pattern_problem(pattern)
        if problem:
            self._fail(pointer, problem)

    def _names_of(self, args: list[Json]) -> list[Name | None]:
        """The names the arguments read, where an argument is a plain var."""
        found: list[Name | None] = []
        for arg in args:
            path = arg.get("var") if isinstance(arg, dict) and len(arg) == 1 else None
            if isinstance(path, list) and path:
                path = path[0]
            found.append(self.names.get(path) if isinstance(path, str) else None)
        return found

    def _comparable(self, args: list[Json], kinds: list[str], pointer: str) -> None:
        numbers = [i for i, kind in enumerate(kinds) if kind == "number"]
        texts = [i for i, kind in enumerate(kinds) if kind == "text"]
        if not numbers or not texts:
            return
        for i in texts:
            if isinstance(args[i], str) and not math.isnan(to_number(args[i])):
                continue  # "5" against a number: equal as JavaScript compares
            names = [name.label for name in self._names_of(args) if name is not None]
            subject = " and ".join(names) or "a number"
            self._fail(pointer, f"compares {subject} (a number and text): they never match")
            return

    def _membership(self, args: list[Json], kinds: list[str], pointer: str) -> None:
        needle, haystack = self._names_of(args)
        if (
            haystack is not None
            and haystack.options is not None
            and isinstance(args[0], str)
            and args[0] not in haystack.options
        ):
            self._fail(pointer, f"{args[0]!r} is not an option of {haystack.label}")
        if needle is not None and needle.options is not None and isinstance(args[1], list):
            unknown = [v for v in args[1] if isinstance(v, str) and v not in needle.options]
            if unknown:
                self._fail(
                    pointer, f"{', '.join(map(repr, unknown))} not an option of {needle.label}"
                )
        if (
            needle is not None
            and needle.kind == "number"
            and isinstance(args[1], list)
            and any(isinstance(v, str) and math.isnan(to_number(v)) for v in args[1])
        ):
            self._fail(pointer, f"looks for {needle.label} (a number) among text")


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


# Escapes and classes RE2 knows that a browser's RegExp (Unicode mode) reads
# otherwise or refuses; an escaped backslash before them is no escape.
_RE2_ONLY = re.compile(r"(?<!\\)(?:\\\\)*\\[AzQECpP]|\[\[:")

# A repeated group that itself repeats: (a+)+, (a|aa)*, (\w+\s?)* ...
# A browser's backtracking engine takes exponential time on these; RE2 does
# not, but the hosted page's script runs the same pattern.
_QUANTIFIER = re.compile(r"[*+?]|\{\d+(?:,\d*)?\}")


def pattern_problem(pattern: Json) -> str | None:
    """What is wrong with a regular expression a form holds, if anything."""
    if not isinstance(pattern, str):
        return "must be a regular expression, written as text"
    if len(pattern) > MAX_PATTERN:
        return f"must be at most {MAX_PATTERN} characters"
    if "(?" in pattern.replace("(?:", ""):
        return "uses (?...) groups; only (?:...) is accepted, as both RE2 and browsers read it"
    if _RE2_ONLY.search(pattern):
        return (
            "uses syntax RE2 reads and browsers do not (\\A, \\z, \\Q, \\C, \\p, \\P, "
            "[[:class:]]): the hosted page's script must match as the server does"
        )
    try:
        compile_pattern(pattern)
    except re2.error as error:
        reason = error.args[0] if error.args else ""
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        return f"is not a regular expression RE2 accepts: {reason}"
    bounds = re.findall(r"\{([0-9]+)(?:,([0-9]*))?\}", pattern)
    counts = [int(n) for pair in bounds for n in pair if n]
    if any(count > MAX_REPEAT for count in counts):
        return f"counts a repetition past {MAX_REPEAT} ({{n}}); longer runs cost too much to match"
    if _nested_repetition(pattern):
        return (
            "repeats a group that itself repeats, such as (a+)+, which takes exponential "
            "time in browsers; repeat the inner part once"
        )
    return None


def _nested_repetition(pattern: str) -> bool:
    """Whether a quantified group contains a quantifier."""
    stack: list[bool] = []  # per open group: whether it holds a quantifier
    index, in_class = 0, False
    last_group_repeats = False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            last_group_repeats = False
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            stack.append(False)
        elif char == ")" and stack:
            last_group_repeats = stack.pop()
            index += 1
            found = _QUANTIFIER.match(pattern, index)
            if found and found.group() != "?" and last_group_repeats:
                return True
            if stack and (found or last_group_repeats):
                stack[-1] = True
            continue
        elif _QUANTIFIER.match(pattern, index) and stack:
            stack[-1] = True
        index += 1
    return False
