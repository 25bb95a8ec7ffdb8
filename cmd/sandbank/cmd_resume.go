package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sandbank/sandbank/durable"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/atomicfile"
	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/spi"
)

// durableOptions are the durable run's flags: run's --suspend NAME and
// --continuation FILE, and what "sandbank resume" read.
type durableOptions struct {
	suspend      string // --suspend NAME: host function NAME answers "not yet"
	continuation string // --continuation FILE: where a suspension's continuation goes
	keys         string // resume --keys: the keys the continuation must be signed by
	resume       *durable.Continuation
	answer       json.RawMessage
	trusted      *receipt.KeySet
}

func (d *durableOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&d.suspend, "suspend", "", "give the script a host function `NAME` that suspends the run (exit code 3; needs --continuation)")
	f.StringVar(&d.continuation, "continuation", "", "write a suspended run's continuation to `FILE`")
}

// suspending adds the --suspend host function to fns (and to the log of
// --json's "hostCalls"), after checking the flags that go with it.
func (d *durableOptions) suspending(fns effect.HostFuncs, log *hostLog, store string) (effect.HostFuncs, *hostLog, error) {
	switch {
	case d.suspend == "" && d.continuation != "" && d.resume == nil:
		return nil, nil, usagef("--continuation needs --suspend")
	case d.suspend == "":
		return fns, log, nil
	case d.continuation == "":
		return nil, nil, usagef("--suspend needs --continuation FILE")
	case store != "":
		return nil, nil, usagef("--suspend and --store cannot be used together (the continuation carries the script)")
	}
	if _, dup := fns[d.suspend]; dup {
		return nil, nil, usagef("--suspend %s: it is also given to --host", quote(d.suspend))
	}
	if fns == nil {
		fns, log = effect.HostFuncs{}, &hostLog{}
	}
	name := d.suspend
	fns[name] = func(ctx context.Context, args json.RawMessage) (any, error) {
		seq, _ := effect.HostCallSeq(ctx)
		log.mu.Lock()
		log.calls = append(log.calls, hostCall{Name: name, Args: append(json.RawMessage(nil), args...), seq: seq})
		log.mu.Unlock()
		return nil, effect.Suspend("sandbank run --suspend " + name)
	}
	return fns, log, nil
}

// run runs call on eff: durably with --suspend, as a resumption for
// resume, else as an ordinary run. A suspension's continuation is written
// to --continuation's file.
func (d *durableOptions) run(ctx context.Context, eff *effect.Effect, call effect.Call) (*effect.Record, error) {
	if d.resume == nil && d.suspend == "" {
		return eff.Run(ctx, call)
	}
	rec, cont, err := durable.Segment{From: d.resume, Answer: d.answer, Options: &durable.Options{Keys: d.trusted}}.Run(ctx, eff, call)
	if cont != nil {
		b, eerr := cont.Encode()
		if eerr == nil {
			eerr = atomicfile.WriteFile(d.continuation, 0o600, b, []byte("\n"))
		}
		if eerr != nil {
			return rec, untyped(fmt.Errorf("--continuation: %w", eerr))
		}
	}
	return rec, err
}

func (a *app) resumeCommand() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "resume [flags] FILE --answer JSON",
		Short: "Resume a suspended run with the answer to the call it waits at",
		Long: `resume continues the run suspended in the continuation FILE (written by
"sandbank run --suspend NAME --continuation FILE"): it runs the script
again from the start on the engine the continuation names, answers the
host calls it logged from the log (each checked: a script that calls
otherwise ends replayDiverged, exit code 2), gives the pending call the
--answer JSON, and goes on live. It prints what "sandbank run" prints,
with the same exit codes; --json gives the same object.

The host functions are given again with --host (and --suspend, which
may suspend the run anew: the new continuation goes to --continuation,
FILE itself by default). Without --suspend, the host function the run
waits at suspends again when the script calls it anew, unless --host
gives it. With --keys the continuation must be signed
by one of those keys (run --sign-key signs it). A continuation that
does not agree with itself, is signed by another key, or names another
engine or engine version is refused, exit code 64. A run given input
files (--file) is resumed with the same files again (the continuation
names them by digest; other ones are refused), and --out writes the
output files as run does.`,
		Example: `  sandbank run --json --host rows=rows.json --suspend approve --continuation wait.json purge.js
  sandbank resume wait.json --answer true --host rows=rows.json --json`,
		Args: cobra.ExactArgs(1),
		RunE: wrap(func(cmd *cobra.Command, args []string) error {
			ctx, stop := cancelOnSignal(cmd.Context())
			defer stop()
			value, err := a.resume(ctx, &o, args[0])
			if err == nil {
				err = a.writeOutputs(&o)
			}
			return a.report(&o, value, err)
		}),
	}
	f := cmd.Flags()
	f.Var(&o.input, "answer", "the pending host call's answer, as `JSON` text")
	f.StringVar(&o.dur.keys, "keys", "", "require the continuation signed by a key in `DIR` (*.pub) or a published keys JSON file")
	f.BoolVar(&o.json, "json", false, "print exactly one JSON object on stdout")
	f.StringArrayVar(&o.hosts, "host", nil, "give the script a host function `NAME=FILE.json` answering with the file's JSON (repeatable)")
	f.StringVar(&o.cacheDir, "cache-dir", "", "keep compiled modules in `DIR` (default: the user cache directory's sandbank/)")
	f.BoolVar(&o.noCache, "no-cache", false, "compile the engine's module afresh, with no compiled-module cache")
	o.rec.addFlags(cmd)
	o.dur.addFlags(cmd)
	o.files.addFlags(cmd)
	return cmd
}

// resume reads the continuation, the answer and the host functions, then
// runs the resumption on the engine the continuation names.
func (a *app) resume(ctx context.Context, o *runOptions, file string) (json.RawMessage, error) {
	if !o.input.set {
		return nil, usagef("resume needs --answer JSON")
	}
	if err := checkJSON([]byte(o.input.text)); err != nil {
		return nil, usagef("--answer: %v", err)
	}
	b, err := readFileBounded(file)
	if err != nil {
		return nil, usagef("cannot read continuation %s: %s", effect.Excerpt(file), reason(err))
	}
	cont, err := durable.Decode(b)
	if err != nil {
		return nil, usagef("continuation %s: %s", effect.Excerpt(file), reason(err))
	}
	d := &o.dur
	d.resume, d.answer = cont, json.RawMessage(o.input.text)
	if d.continuation == "" {
		d.continuation = file
	}
	if d.keys != "" {
		if d.trusted, err = receipt.ReadKeys(d.keys); err != nil {
			return nil, usagef("--keys %s: %s", effect.Excerpt(d.keys), reason(err))
		}
	}
	hostFuncs, hostLog, err := parseHosts(o.hosts)
	if err != nil {
		return nil, err
	}
	if name, _, ok := cont.Pending(); ok && d.suspend == "" {
		if _, given := hostFuncs[name]; !given {
			d.suspend = name // what the run waits at waits again when called anew
		}
	}
	if hostFuncs, hostLog, err = d.suspending(hostFuncs, hostLog, ""); err != nil {
		return nil, err
	}
	o.hostLog = hostLog
	if err := o.rec.openReceipt(); err != nil {
		return nil, err
	}
	// The engine the continuation names, with its limits as the ceiling;
	// the effect refuses it if its version is not the continuation's.
	o.engine = cont.Receipt.Engine
	limits := spi.Limits{WallClock: cont.Receipt.Limits.WallClock, MemoryBytes: cont.Receipt.Limits.MemoryBytes}
	files, err := o.files.read() // the suspended run's, again (files.go)
	if err != nil {
		return nil, err
	}
	if err := o.files.prepareOut(); err != nil {
		return nil, err
	}
	return a.runOn(ctx, o, "", limits, effect.Call{Host: hostFuncs, Files: files})
}
