import sys

from bench.studies.ab.cli import main

sys.exit(main())
