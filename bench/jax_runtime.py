"""The bench/runtime tiny program through jax on the CPU: jit add of two f32[4], per-call time."""
import json
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_platforms", "cpu")
iters = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
f = jax.jit(lambda a, b: a + b)
x = np.array([1, 2, 3, 4], dtype=np.float32)
for _ in range(500):
    np.asarray(f(x, x).block_until_ready())
samples = []
for _ in range(iters):
    t = time.perf_counter_ns()
    np.asarray(f(x, x).block_until_ready())
    samples.append((time.perf_counter_ns() - t) / 1e3)
samples.sort()
pick = lambda p: samples[min(len(samples) - 1, max(0, -(-p * len(samples) // 100) - 1))]
print(json.dumps({"version": jax.__version__, "n": iters, "p50": pick(50), "p90": pick(90), "p99": pick(99)}))
