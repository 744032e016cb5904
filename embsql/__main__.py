import sys

from embsql.cli import main

sys.exit(main())
