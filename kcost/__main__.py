from kcost.launch import main

main()
