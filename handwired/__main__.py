from handwired.cli import main

main()
