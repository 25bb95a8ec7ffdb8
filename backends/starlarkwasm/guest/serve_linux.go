//go:build linux

package main

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
)

// Ready is the byte the native guest writes to stdout once it is
// confined, before it reads anything: the host keeps a confined child
// ready off the request path and knows from this byte that confining
// worked. It carries nothing of a run.
const Ready = 'R'

// exitConfine is the native guest's exit code when it could not confine
// itself; it has then read nothing.
const exitConfine = 3

// serve is the native guest (backends/starlarknative), started with no
// arguments: it confines itself (confine_linux.go) before it reads
// anything, says so (Ready), then reads the run's arguments as one line
// on stdin (a child is started before its request is known), lowers its
// address-space limit to fit the run's memory limit, and runs.
func serve() int {
	if len(os.Args) != 1 {
		io.WriteString(os.Stderr, "guest: the native guest takes no arguments\n")
		return 2
	}
	base, err := confine()
	if err != nil {
		io.WriteString(os.Stderr, "guest: confining: "+err.Error()+"\n")
		return exitConfine
	}
	if _, err := os.Stdout.Write([]byte{Ready}); err != nil {
		return 2
	}
	// The arguments' line is bounded by the reader's buffer.
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	line, err := in.ReadSlice('\n')
	if err != nil {
		io.WriteString(os.Stderr, "guest: no arguments line\n")
		return 2
	}
	args := append([]string{"guest"}, strings.Fields(string(line))...)
	if len(args) == 5 {
		if mem, err := strconv.ParseInt(args[3], 10, 64); err == nil && mem > 0 {
			if err := limitAddressSpace(base, mem); err != nil {
				io.WriteString(os.Stderr, "guest: address-space limit: "+err.Error()+"\n")
				return 2
			}
		}
	}
	code := run(args, in, os.Stdout, os.Stderr)
	// The run's last record and log line are written: closing both
	// streams tells the host so before the process's exit (its
	// namespaces' teardown) is over.
	os.Stdout.Close()
	os.Stderr.Close()
	return code
}

// gcPercent is Go's default for the native child: natively the collector
// is cheap, and with it off a heap near the memory limit (a reshape under
// 32 MiB) collects again and again (docs/performance.md, issue 43).
const gcPercent = 100
