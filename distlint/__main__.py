import sys

from distlint.cli import main

sys.exit(main())
