"""What to install when an optional library is missing: the command each such message names.

The testbed is not on PyPI, so a hint names the library itself, with the requirement its
extra declares in pyproject.toml (``plot``, ``pandas``, ``dask``), which works the same for
an install from a wheel or from a checkout. tests/test_install_hints.py holds each to the
extra's requirement.
"""

from __future__ import annotations

#: matplotlib, for ``--timeline``, ``--heatmap`` and ``sim.api``'s figures (the ``plot`` extra).
PLOT = "pip install 'matplotlib>=3.8'"
#: pandas, for ``to_pandas()`` (the ``pandas`` extra).
PANDAS = "pip install 'pandas>=2.1'"
#: Dask distributed, for ``sweep --dask`` (the ``dask`` extra), on the client and the workers.
DASK = "pip install 'distributed>=2024.1'"
