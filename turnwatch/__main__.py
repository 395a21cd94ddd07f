import sys

from turnwatch.app.cli import main

sys.exit(main())
