"""Results as pandas tables: the optional import, done only when a table is asked for.

pandas is an extra (``pip install 'pandas>=2.1'``, the ``pandas`` extra): nothing in the
simulator needs it, so no module imports it before a ``to_pandas()`` call does.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from platform_testbed.sim.config.scenario import OUTCOMES
from platform_testbed.sim.runtime import installs

if TYPE_CHECKING:
    import pandas as pd

#: What to install when pandas is missing (the one line ``to_pandas()`` raises).
INSTALL = installs.PANDAS

#: The dtype a column gets: nullable integers and booleans, because a sweep world that
#: raised has no counts (its row holds only the error); ``OUTCOME`` is categorical in
#: ``OUTCOMES`` order, so value counts list every outcome, zeros included.
FLOAT, INT, BOOL, TEXT, OUTCOME = "float64", "Int64", "boolean", "string", "outcome"


def pandas() -> Any:
    """The pandas module; without it, an ImportError whose one line says what to install."""
    try:
        return importlib.import_module("pandas")
    except ImportError:
        raise ImportError(f"to_pandas() needs pandas, which is not installed: {INSTALL}") from None


def frame(
    rows: Sequence[Mapping[str, Any]], dtypes: Mapping[str, str],
    columns: Sequence[str] | None = None,
) -> pd.DataFrame:
    """A DataFrame of ``rows`` with exactly ``columns`` (by default those of ``dtypes``), in
    order, typed by ``dtypes``.

    Columns ``dtypes`` does not name (a sweep's axes, ``point``, ``seed``) keep the dtype
    pandas infers from their values.
    """
    pd = pandas()
    names = list(dtypes if columns is None else columns)
    table = pd.DataFrame.from_records([dict(row) for row in rows], columns=names)
    outcome = pd.CategoricalDtype(list(OUTCOMES))
    return table.astype({c: outcome if d == OUTCOME else d
                         for c, d in dtypes.items() if c in table.columns})
