import sys

from bench.history.cli import main

sys.exit(main())
