// Command devserver runs a Temporal development server (in memory, no UI)
// on 127.0.0.1 for the integration test of package
// github.com/sandbank/sandbank/temporal, until its standard input closes or
// it gets SIGTERM or SIGINT.
//
// It is its own module because the server (go.temporal.io/server, through
// github.com/temporalio/cli's temporalcli/devserver) needs an older
// go.temporal.io/api than the SDK the package uses, so the two cannot be
// built into one binary; it is also heavy to build, and this keeps it out of
// every other build.
//
// Usage:
//
//	devserver -port 7233
//
// It prints "ready <host:port>" on standard output once the frontend
// accepts connections.
package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/temporalio/cli/temporalcli/devserver"
)

func main() {
	port := flag.Int("port", 0, "frontend port (0: a free one)")
	flag.Parse()
	if *port == 0 {
		*port = devserver.MustGetFreePort("127.0.0.1")
	}
	s, err := devserver.Start(devserver.StartOptions{
		FrontendIP:             "127.0.0.1",
		FrontendPort:           *port,
		Namespaces:             []string{"default"},
		ClusterID:              "sandbank-test",
		MasterClusterName:      "active",
		CurrentClusterName:     "active",
		InitialFailoverVersion: 1,
		Logger:                 slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		LogLevel:               slog.LevelError,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "devserver:", err)
		os.Exit(1)
	}
	fmt.Printf("ready 127.0.0.1:%d\n", *port)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop <- syscall.SIGTERM
	}()
	<-stop
	s.Stop()
}
