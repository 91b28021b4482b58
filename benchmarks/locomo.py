"""Run the LoCoMo evidence-recall benchmark: ``python benchmarks/locomo.py [args]`` = ``agentx-memory bench locomo``."""

import sys

from agentx_memory.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "locomo", *sys.argv[1:]]))
