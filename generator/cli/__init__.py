"""The command line: one click group that parses options and calls one function of commands/."""
