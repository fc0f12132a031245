"""MPC-friendly attention (freeDiv / 2Quad, Quad GeLU, distillation). Not reproduced yet."""
