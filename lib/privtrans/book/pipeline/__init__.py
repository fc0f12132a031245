"""The build: papermill runs every notebook (with a cache), claims are judged, pages generated, then
Jupyter Book renders what papermill wrote. Entry point: ``python -m privtrans.book.pipeline``."""
