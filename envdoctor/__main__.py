from envdoctor.cli import main

main()
