import sys

from bench.studies.sweep.cli import main

sys.exit(main())
