"""Readers of the data sets that PyPI wheels ship, one module per source. Each file is found by path
inside the installed distribution (``wheel_files.package_file``), never downloaded and never
imported as code; each module's docstring gives the source, licence and pin."""
