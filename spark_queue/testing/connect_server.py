"""``python -m spark_queue.testing.connect_server PORT``: the plugin's local Connect server."""

from __future__ import annotations

import sys

from spark_queue.testing.sessions import serve

if __name__ == "__main__":
    serve(int(sys.argv[1]))
