"""Starts MLServer's CLI with Triton's ModelConfig RPC added (model_config_rpc) for perf_analyzer.
Usage: python mlserver_start.py start SETTINGS_DIR"""
import sys

import model_config_rpc  # noqa: F401  (before mlserver builds its gRPC server)
from mlserver.cli import main

if __name__ == "__main__":
    sys.argv[0] = "mlserver"
    sys.exit(main())
