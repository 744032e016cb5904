"""Arrow column types shared by the engine modules: what a result looks like once it is back
(``uniform``), and what a loaded table's columns become (``loadable``)."""

from __future__ import annotations

import pyarrow as pa

from embsql.errors import InputError


def uniform_type(type_: pa.DataType) -> pa.DataType:
    """Integers become int64, floats and non-integral decimals float64, lists list<...>."""
    if pa.types.is_integer(type_):
        return pa.int64()
    if pa.types.is_decimal(type_):
        return pa.int64() if type_.scale == 0 else pa.float64()
    if pa.types.is_floating(type_):
        return pa.float64()
    if pa.types.is_large_string(type_) or pa.types.is_string_view(type_):
        return pa.string()
    if is_listlike(type_):
        return pa.list_(uniform_type(type_.value_type))
    return type_


def uniform(table: pa.Table) -> pa.Table:
    columns = []
    for column in table.columns:
        target = uniform_type(column.type)
        try:
            columns.append(column.cast(target))
        except pa.ArrowInvalid:  # an integral decimal beyond int64 (a huge sum): keep it as a float
            columns.append(column.cast(pa.float64()))
    return pa.Table.from_arrays(columns, names=table.column_names)


def is_listlike(type_: pa.DataType) -> bool:
    return pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_fixed_size_list(type_)


def is_numeric_list(type_: pa.DataType) -> bool:
    return is_listlike(type_) and (pa.types.is_integer(type_.value_type) or pa.types.is_floating(type_.value_type)
                                   or pa.types.is_decimal(type_.value_type))


def loadable(table: pa.Table, dialect: str) -> tuple[pa.Table, list[str]]:
    """The table with numeric vectors as list<double>, and each column's PostgreSQL type."""
    columns, sql_types = [], []
    for name, column in zip(table.column_names, table.columns):
        type_ = column.type
        if is_numeric_list(type_):
            column, sql_type = column.cast(pa.list_(pa.float64())), "double precision[]"
        elif pa.types.is_integer(type_):
            column, sql_type = column.cast(pa.int64()), "bigint"
        elif pa.types.is_floating(type_) or pa.types.is_decimal(type_):
            column, sql_type = column.cast(pa.float64()), "double precision"
        elif pa.types.is_boolean(type_):
            sql_type = "boolean"
        elif pa.types.is_string(type_) or pa.types.is_large_string(type_):
            column, sql_type = column.cast(pa.string()), "text"
        else:
            raise InputError(f"load_table cannot send column {name!r} of type {type_} to {dialect}; "
                             "it takes numbers, booleans, strings and lists of numbers")
        columns.append(column)
        sql_types.append(sql_type)
    return pa.Table.from_arrays(columns, names=table.column_names), sql_types
