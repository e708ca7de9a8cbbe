import sys

from bench.sweep.cli import main

sys.exit(main())
