from monad_cli.app import main

raise SystemExit(main())
