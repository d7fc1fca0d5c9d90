from distlint.cli import run

run()
