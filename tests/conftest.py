import os

# Tests share 2 cores with nothing else in CI; keep BLAS from oversubscribing when pytest-xdist is absent.
os.environ.setdefault("OMP_NUM_THREADS", "2")
