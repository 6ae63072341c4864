from slurmkit.cli import main

main()
