"""DuckDB SQL → Spark SQL: SQLGlot's transpiler plus the rewrites where the two engines differ in meaning.

The metrics and views are written once, in DuckDB SQL; this module derives the Spark statement from that text, so
there is no second copy to drift. SQLGlot carries most of it (FILTER clauses, ``arg_max`` with struct keys,
``list_contains``, ANTI JOIN, ``VALUES ... AS t(a, b)``, ``$name`` parameters as ``:name``). What it translates
to something that runs but answers differently, or leaves untranslated, is rewritten here:

==============================  =====================================  ============================================
DuckDB                          SQLGlot alone                          here
==============================  =====================================  ============================================
``epoch(ts)`` (seconds, µs)     ``unix_timestamp`` (whole seconds)     ``unix_micros(ts) / 1e6``
``epoch_us(ts)``                passed through (no such function)      ``unix_micros(ts)``
``quantile_cont(x, q)``         ``percentile_cont`` (not a function)   ``percentile(x, q)``: exact, the same
                                                                       linear interpolation (``percentile_approx``
                                                                       is not)
``arg_min/arg_max(a, k)``       ``min_by/max_by``: a row whose ``a``   ``min_by(a, if(a IS NULL, NULL, k))``:
                                is NULL can win                        DuckDB skips rows whose ``a`` is NULL
two ``unnest()`` in one SELECT  two ``explode()``: every item paired   ``inline(arrays_zip(...)) AS (x, y)``
                                with every other                       (DuckDB zips, padding with NULL)
``UBIGINT``/``HUGEINT``         passed through                         ``DECIMAL(20,0)``/``DECIMAL(38,0)``
``least(x)``, ``greatest(x)``   an error (Spark wants two or more)     ``x``
==============================  =====================================  ============================================

Refused with :class:`SparkSqlError` rather than guessed: a function SQLGlot passes through unknown (it would fail
at run time, or worse, mean something else), ``'±infinity'`` timestamps (an error under ANSI mode, NULL without
it, so a view would silently lose its rows), and anything SQLGlot itself reports as unsupported.

NULL ordering (DuckDB sorts NULLs last, Spark first) is made explicit by SQLGlot; integer ``//`` becomes ``DIV``
(both truncate; the metrics divide non-negative values only); ``/`` divides as a double on both. Time zones do not
enter: every time is compared and subtracted as an instant, buckets are computed on epoch microseconds, and results
are read back as UTC instants (:mod:`.source`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError

from ..errors import ChainopsError


class SparkSqlError(ChainopsError):
    """A statement that cannot be carried to Spark SQL with the same meaning."""


#: Functions the rewritten statements may call by a name SQLGlot does not model (checked with the session's own
#: registry too when one is given).
SPARK_FUNCTIONS_USED = frozenset({"unix_micros", "percentile", "inline", "arrays_zip", "log2"})

_WIDE_INTEGERS = {
    exp.DataType.Type.UBIGINT: "DECIMAL(20, 0)",
    exp.DataType.Type.BIGDECIMAL: "DECIMAL(38, 0)",
    exp.DataType.Type.INT128: "DECIMAL(38, 0)",
    exp.DataType.Type.UINT128: "DECIMAL(38, 0)",
}

_TIMES = (exp.DataType.Type.TIMESTAMPTZ, exp.DataType.Type.TIMESTAMP, exp.DataType.Type.DATE)


def _call(name: str, *args: exp.Expression) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


def _epoch_seconds(node: exp.TimeToUnix) -> exp.Expression:
    # a double literal (1e6): a decimal one would make the difference a DECIMAL column
    return exp.Paren(this=exp.Div(this=_call("UNIX_MICROS", node.this), expression=exp.Literal.number("1e6")))


def _percentile(node: exp.PercentileCont) -> exp.Expression:
    if node.args.get("expression") is None:
        raise SparkSqlError(f"cannot carry {node.sql('duckdb')!r} to Spark: give quantile_cont its fraction(s)")
    return _call("PERCENTILE", node.this, node.expression)


def _arg_extreme(node: exp.ArgMin | exp.ArgMax) -> exp.Expression:
    value, key = node.this, node.expression
    guarded = exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()), true=exp.Null(), false=key)
    return node.__class__(this=value, expression=guarded)


def _zip_unnests(select: exp.Select) -> exp.Select:
    """``SELECT unnest(a) AS x, unnest(b) AS y`` → ``SELECT inline(arrays_zip(a, b)) AS (x, y)``."""
    explodes = [(i, e) for i, e in enumerate(select.expressions) if isinstance(e.unalias(), exp.Explode)]
    if len(explodes) < 2:
        return select
    if len(explodes) != len(select.expressions):
        raise SparkSqlError("cannot carry a SELECT mixing several unnest() with other columns to Spark")
    names = []
    for _, e in explodes:
        if not isinstance(e, exp.Alias):
            raise SparkSqlError("give every unnest() of a SELECT an alias so it can be carried to Spark")
        names.append(exp.to_identifier(e.alias))
    zipped = _call("INLINE", _call("ARRAYS_ZIP", *[e.unalias().this for _, e in explodes]))
    select.set("expressions", [exp.Aliases(this=zipped, expressions=names)])
    return select


def _single_extreme(node: exp.Least | exp.Greatest) -> exp.Expression:
    # DuckDB takes least(x) of one value; Spark wants two or more
    return node.this if not node.expressions else node


def _cast(node: exp.Cast) -> exp.Expression:
    to = node.to
    if to.this in _WIDE_INTEGERS:
        node.set("to", exp.DataType.build(_WIDE_INTEGERS[to.this], dialect="spark"))
    literal = node.this if isinstance(node.this, exp.Literal) and node.this.is_string else None
    if literal is not None and "infinity" in literal.this.lower() and to.is_type(*_TIMES):
        raise SparkSqlError(
            f"cannot carry {node.sql('duckdb')!r} to Spark: Spark has no infinite timestamps "
            "(an error under ANSI mode, NULL without it)"
        )
    return node


_REWRITES: dict[type[exp.Expression], Callable[..., exp.Expression]] = {
    exp.TimeToUnix: _epoch_seconds,
    exp.PercentileCont: _percentile,
    exp.ArgMin: _arg_extreme,
    exp.ArgMax: _arg_extreme,
    exp.Select: _zip_unnests,
    exp.Cast: _cast,
    exp.Least: _single_extreme,
    exp.Greatest: _single_extreme,
}

_RENAMES = {"epoch_us": "UNIX_MICROS"}


def _rewrite(node: exp.Expression) -> exp.Expression:
    rewrite = _REWRITES.get(type(node))
    if rewrite is not None:
        return rewrite(node)
    if isinstance(node, exp.Anonymous) and str(node.this).lower() in _RENAMES:
        return _call(_RENAMES[str(node.this).lower()], *node.expressions)
    return node


def _rewrite_tree(tree: exp.Expression) -> exp.Expression:
    """Every node rewritten children first, so a rewrite sees (and keeps) rewritten arguments."""
    for node in reversed(list(tree.walk())):
        new = _rewrite(node)
        if new is not node:
            if node is tree:
                tree = new
            else:
                node.replace(new)
    return tree


def _refuse_unknown(tree: exp.Expression, known: Collection[str] | None) -> None:
    allowed = {f.lower() for f in (known or ())} | SPARK_FUNCTIONS_USED
    for node in tree.find_all(exp.Anonymous):
        name = str(node.this).lower()
        if name not in allowed:
            raise SparkSqlError(
                f"cannot carry the function {name}() to Spark: SQLGlot does not know it and Spark "
                f"{'has no such function' if known else 'may not have it'}; write it with a function both engines "
                "share"
            )


def rename_tables(tree: exp.Expression, names: dict[str, str]) -> exp.Expression:
    """``tree`` with every reference to a table in ``names`` (not a CTE of the statement) renamed to its value."""
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        if not table.db and table.name in names and table.name not in ctes:
            table.set("this", exp.to_identifier(names[table.name]))
    return tree


def to_spark(sql: str, *, tables: dict[str, str] | None = None, spark_functions: Collection[str] | None = None) -> str:
    """Spark SQL for one DuckDB statement, with the rewrites of the module docstring.

    Arguments: ``sql`` one DuckDB SELECT (``$name`` parameters stay parameters, as ``:name``); ``tables`` renames
    relations (the warehouse's names to the session's); ``spark_functions`` the session's function names, to refuse
    a function it lacks before it runs. Returns the statement. Raises :class:`SparkSqlError` for what cannot be
    carried with the same meaning.
    """
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
        tree = _rewrite_tree(tree)
        if tables:
            tree = rename_tables(tree, tables)
        _refuse_unknown(tree, spark_functions)
        return tree.sql(dialect="spark", unsupported_level=ErrorLevel.RAISE)
    except SqlglotError as exc:
        raise SparkSqlError(f"cannot carry this statement to Spark SQL: {exc}") from None


__all__ = ["SPARK_FUNCTIONS_USED", "SparkSqlError", "rename_tables", "to_spark"]
