import sys

from turnwatch.cli import main

sys.exit(main())
