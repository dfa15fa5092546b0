"""tritonclient's Python gRPC client driving one model at a fixed concurrency, for bench/client.mjs:
C threads, each with its own InferenceServerClient, send the same request back to back for the
given seconds (after a warm-up). Prints one JSON line: requests, seconds, the process's CPU
seconds (all threads) over the measured window, and latencies in µs.

usage: python3 bench/client_tritonclient.py GRPC_URL MODEL INPUT ROWS FEATURES CONCURRENCY SECONDS
"""
import json
import sys
import threading
import time

import numpy as np
import tritonclient.grpc as grpcclient

url, model, input_name = sys.argv[1:4]
rows, features, concurrency = (int(v) for v in sys.argv[4:7])
seconds = float(sys.argv[7])

x = np.full((rows, features), 0.5, np.float32)
lat_us = []
lock = threading.Lock()
start = threading.Barrier(concurrency + 1)
stop_at = [0.0]


def worker():
    c = grpcclient.InferenceServerClient(url)
    inp = grpcclient.InferInput(input_name, list(x.shape), "FP32")
    inp.set_data_from_numpy(x)
    for _ in range(20):
        c.infer(model, [inp])
    start.wait()
    mine = []
    while True:
        t = time.perf_counter()
        if t >= stop_at[0]:
            break
        c.infer(model, [inp])
        mine.append((time.perf_counter() - t) * 1e6)
    with lock:
        lat_us.extend(mine)
    c.close()


threads = [threading.Thread(target=worker) for _ in range(concurrency)]
for th in threads:
    th.start()
stop_at[0] = time.perf_counter() + 1e9
start.wait()
t0 = time.perf_counter()
cpu0 = time.process_time()
stop_at[0] = t0 + seconds
for th in threads:
    th.join()
elapsed = time.perf_counter() - t0
cpu = time.process_time() - cpu0
print(json.dumps({"requests": len(lat_us), "seconds": elapsed, "cpu_seconds": cpu, "latencies_us": lat_us}))
