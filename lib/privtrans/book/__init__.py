"""The book machinery: what turns notebooks into the book, independent of any paper.

- ``chapters``: the chapter registry (keys, titles), profiles and the parameter checks
- ``session``: the context every notebook opens (settings, seeding, figures, tables, results.json)
- ``profiles``: what ``smoke`` / ``ci`` / ``paper`` mean, read from each chapter's ``profile*.yaml``
- ``claims``: a chapter's claims file judged against its notebooks' results
- ``runcache``: one fingerprint scheme, one atomic write, and the run cache of expensive artefacts
- ``plotting``, ``paths``, ``device``: one theme, where files live, which accelerator
- ``pipeline``: papermill execution with a cache, summary.json, the Jupyter Book build
"""
