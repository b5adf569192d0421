"""Statistics over per-instance summaries: standard errors, and paired differences
between methods with a paired t-test."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..common.errors import InvalidInputError


def standard_errors(summaries: pd.DataFrame) -> pd.DataFrame:
    """Methods x metrics from per-instance summaries (rows indexed by method, instance):
    sample standard deviation / sqrt(n), NaN under two instances."""
    grouped = summaries.groupby(level="method", sort=False)
    return grouped.std(ddof=1) / np.sqrt(grouped.count())


#: the columns of :func:`paired_differences`
PAIRED_COLUMNS = ["method", "metric", "difference", "standard_error", "instances", "p_value"]


def paired_differences(summaries: pd.DataFrame, versus: str) -> pd.DataFrame:
    """Every other method minus ``versus``, metric by metric, instance by instance.

    ``summaries`` holds per-instance summaries (rows indexed by method, instance). Two
    methods scored on the same texts share those texts' difficulty, so the standard error
    of their paired differences is smaller than the two methods' own errors combined:
    it says whether a small run tells two close methods apart. ``p_value`` is the paired
    t-test's (two-sided; Student's t with n - 1 degrees of freedom, which a handful of
    instances needs: two standard errors is no 95% bound under 30 or so). Only instances
    where both have a number count; error and p are NaN under two of them.
    """
    from scipy import stats

    methods = list(dict.fromkeys(summaries.index.get_level_values("method")))
    if versus not in methods:
        raise InvalidInputError(
            f"no method {versus!r} to compare against; methods: {', '.join(methods)}"
        )
    reference = summaries.xs(versus, level="method")
    records = []
    for method in methods:
        if method == versus:
            continue
        own = summaries.xs(method, level="method")
        for metric in summaries.columns:
            both = pd.concat([own[metric], reference[metric]], axis=1, join="inner").dropna()
            differences = (both.iloc[:, 0] - both.iloc[:, 1]).to_numpy(float)
            count = len(differences)
            mean = differences.mean() if count else np.nan
            error = differences.std(ddof=1) / np.sqrt(count) if count > 1 else np.nan
            if count < 2:
                p_value = np.nan
            elif error > 0:
                p_value = 2 * stats.t.sf(abs(mean) / error, count - 1)
            else:  # every difference the same: certain, unless it is zero
                p_value = 1.0 if mean == 0 else 0.0
            records.append(
                {
                    "method": method,
                    "metric": metric,
                    "difference": mean,
                    "standard_error": error,
                    "instances": count,
                    "p_value": p_value,
                }
            )
    return pd.DataFrame(records, columns=PAIRED_COLUMNS)
