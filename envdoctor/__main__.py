from envdoctor.cli.launch import main

main()
