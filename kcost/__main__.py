from kcost.cli import main

main()
