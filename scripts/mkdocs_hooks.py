"""MkDocs hook: a page's `<!-- dfslab: spec-reference -->` or `<!-- dfslab: experiment-reference -->`
becomes the reference tables dfslab.schema makes from the models that validate files."""

from __future__ import annotations

MARKS = {
    "<!-- dfslab: spec-reference -->": "spec_reference",
    "<!-- dfslab: experiment-reference -->": "experiment_reference",
}


def on_page_markdown(markdown: str, page, config, files) -> str:
    from dfslab import schema
    for mark, maker in MARKS.items():
        if mark in markdown:
            markdown = markdown.replace(mark, getattr(schema, maker)())
    return markdown
