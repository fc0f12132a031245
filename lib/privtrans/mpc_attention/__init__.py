"""MPC-friendly attention (freeDiv): the paper's attention normalisers, their fits and their secure cost."""
