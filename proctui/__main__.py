from proctui.startup import main

main()
