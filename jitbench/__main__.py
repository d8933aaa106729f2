from jitbench.cli import main

main()
