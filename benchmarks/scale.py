"""Run the scale benchmark: ``python benchmarks/scale.py [args]`` = ``agentx-memory bench scale``."""

import sys

from agentx_memory.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "scale", *sys.argv[1:]]))
