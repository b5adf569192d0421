"""The column names a data file's texts and labels are read from, in the order tried.

Shared by the data readers (which read such files) and by the model's input checks (which
advise how to pass a pandas DataFrame's texts), so the two never disagree.
"""

from __future__ import annotations

#: a single text's columns
TEXT_COLUMNS = ("sentence", "text", "review", "content")
#: a sentence pair's columns (first, second)
PAIR_COLUMNS = (
    ("sentence1", "sentence2"),
    ("premise", "hypothesis"),
    ("question", "sentence"),
    ("question", "passage"),
)
#: a gold label's columns
LABEL_COLUMNS = ("label", "score", "gold", "classification")
