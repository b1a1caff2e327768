"""MkDocs hook: a page's `<!-- dfslab: spec-reference -->` or `<!-- dfslab: experiment-reference -->`
becomes the reference tables dfslab.schema makes from the models that validate files, and
`<!-- dfslab: capabilities -->` the matrix `dfslab capabilities` prints."""

from __future__ import annotations

MARKS = {
    "<!-- dfslab: spec-reference -->": "spec_reference",
    "<!-- dfslab: experiment-reference -->": "experiment_reference",
}
# Marks made by another module of dfslab's: `dfslab capabilities`, from the declarations that refuse.
OTHER_MARKS = {"<!-- dfslab: capabilities -->": ("dfslab.capabilities", "markdown")}


def on_page_markdown(markdown: str, page, config, files) -> str:
    from dfslab import schema
    for mark, maker in MARKS.items():
        if mark in markdown:
            markdown = markdown.replace(mark, getattr(schema, maker)())
    for mark, (module, maker) in OTHER_MARKS.items():
        if mark in markdown:
            from importlib import import_module
            markdown = markdown.replace(mark, getattr(import_module(module), maker)())
    return markdown
