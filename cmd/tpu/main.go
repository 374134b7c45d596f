// Command tpu is the transaction processing unit: one binary with
// subcommands. Run "tpu help" for the list.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// command is one subcommand. run returns the process exit status: 0 for
// success, 1 for a failure of the work, 2 for a usage error.
type command struct {
	name    string // "tx decode"
	summary string
	run     func(env *cliEnv, args []string) int
}

// cliEnv is what a command may touch of the process, so tests can run
// commands in-process.
type cliEnv struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

var commands []command

// flagSet returns a subcommand's flag set: errors and usage go to stderr,
// and the usage is help followed by the flags.
func (env *cliEnv) flagSet(name, help string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, help)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses a subcommand's arguments. When it returns ok false the
// command stops with code: 0 after -h, 2 after a bad flag (the flag
// package has reported it).
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	return 0, true
}

func register(c command) { commands = append(commands, c) }

func main() {
	env := &cliEnv{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(runCLI(env, os.Args[1:]))
}

// runCLI finds the longest command name that prefixes args and runs it.
func runCLI(env *cliEnv, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			return runCLI(env, append(args[1:], "--help"))
		}
		usage(env.stdout)
		return 0
	}
	var best *command
	bestWords := 0
	for i := range commands {
		words := strings.Fields(commands[i].name)
		if len(words) <= len(args) && len(words) > bestWords && equalWords(words, args[:len(words)]) {
			best, bestWords = &commands[i], len(words)
		}
	}
	if best == nil {
		// A group name alone ("tpu tx") lists its commands.
		if group := commandsUnder(args[0]); len(group) > 0 {
			fmt.Fprintf(env.stderr, "tpu %s: missing subcommand; one of:\n", args[0])
			for _, c := range group {
				fmt.Fprintf(env.stderr, "  tpu %-14s %s\n", c.name, c.summary)
			}
			return 2
		}
		fmt.Fprintf(env.stderr, "tpu: unknown command %q (run 'tpu help')\n", strings.Join(args, " "))
		return 2
	}
	return best.run(env, args[bestWords:])
}

func equalWords(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func commandsUnder(group string) []command {
	var out []command
	for _, c := range commands {
		if strings.HasPrefix(c.name, group+" ") {
			out = append(out, c)
		}
	}
	return out
}

func usage(w io.Writer) {
	fmt.Fprintln(w, `tpu: the transaction processing unit of a Solana-style validator

Usage: tpu <command> [flags] [args]

Commands:`)
	sorted := append([]command(nil), commands...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	for _, c := range sorted {
		fmt.Fprintf(w, "  %-16s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, `
Run 'tpu <command> --help' for a command's flags.`)
}
