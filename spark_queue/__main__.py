from spark_queue.cli import main

raise SystemExit(main())
