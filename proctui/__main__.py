from proctui.cli import main

main()
