from monad_cli.cli.app import main

raise SystemExit(main())
