from envdoctor.launch import main

main()
