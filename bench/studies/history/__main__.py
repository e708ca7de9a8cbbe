import sys

from bench.studies.history.cli import main

sys.exit(main())
