package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

// recordOptions are run's flags about the run record, and the record
// once the run is over.
type recordOptions struct {
	quiet   bool
	receipt string
	signKey string

	file   *os.File       // --receipt, created before the run
	signer record.Signer  // --sign-key, read before the run
	rec    *effect.Record // the run's record, nil when it has none
}

func (r *recordOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&r.quiet, "quiet", false, "do not print what the script logs on stderr")
	f.StringVar(&r.receipt, "receipt", "", "write the run's receipt (canonical JSON) to `FILE`")
	f.StringVar(&r.signKey, "sign-key", "", "sign the receipt with the private key in `FILE` (see 'sandbank keygen')")
}

// eventBuffer lets every kept line of a run wait for stderr: the record
// keeps at most effect.DefaultMaxLogLines lines, each with one event.
const eventBuffer = effect.DefaultMaxLogLines + 8

// finishWait bounds how long run waits for the last lines to reach stderr
// after the run: the printer is quick; stderr may not be.
const finishWait = 10 * time.Second

// runRecorded runs call through eff, printing the script's lines on
// stderr as they arrive (unless --quiet), keeps the record for report,
// and writes the receipt to --receipt.
func (a *app) runRecorded(ctx context.Context, eff *effect.Effect, call effect.Call, o *runOptions) (json.RawMessage, error) {
	r := &o.rec
	finished := make(chan struct{})
	if r.quiet {
		close(finished)
	} else {
		p := &linePrinter{w: a.stderr}
		call.Events = func(ev effect.Event) {
			switch ev.Kind {
			case effect.EventLog:
				p.print(ev.Log)
			case effect.EventFinished:
				if c := ev.Record.LogsCut; c != nil {
					p.printf("sandbank: the script's log was cut: %d more lines (%d bytes) dropped\n", c.Lines, c.Bytes)
				}
				close(finished)
			}
		}
	}
	rec, err := o.dur.run(ctx, eff, call)
	if rec == nil && !r.quiet {
		close(finished) // no record, no events
	}
	select {
	case <-finished:
	case <-time.After(finishWait):
	}
	r.rec = rec
	if r.file != nil {
		if werr := writeReceipt(r.file, rec); werr != nil && err == nil {
			return nil, untyped(fmt.Errorf("--receipt: %w", werr))
		}
	}
	if rec == nil {
		return nil, err
	}
	return rec.Value, err
}

// openReceipt reads --sign-key and creates --receipt's file before the
// run, so that a key that cannot be used or a path that cannot be
// written is a usage error that costs no engine.
func (r *recordOptions) openReceipt() error {
	if r.signKey != "" {
		s, err := readSignKey("--sign-key", r.signKey)
		if err != nil {
			return err
		}
		r.signer = s
	}
	if r.receipt == "" {
		return nil
	}
	f, err := os.Create(r.receipt)
	if err != nil {
		return usagef("--receipt %s: %s", effect.Excerpt(r.receipt), reason(err))
	}
	r.file = f
	return nil
}

// writeReceipt writes rec's receipt as canonical JSON and a newline, and
// closes f. A run without a record writes "null".
func writeReceipt(f *os.File, rec *effect.Record) error {
	b := []byte("null")
	if rec != nil {
		c, err := rec.Receipt.Canonical()
		if err != nil {
			_ = f.Close()
			return err
		}
		b = c
	}
	_, err := f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// jsonMembers returns the record's members for run --json's object:
// ,"logs":[…],"stats":{…},"receipt":{…} (and "logsCut", "eventsDropped"
// when present), or nothing without a record.
func (r *recordOptions) jsonMembers() ([]byte, error) {
	if r.rec == nil {
		return nil, nil
	}
	b, err := json.Marshal(struct {
		Logs          []record.LogLine `json:"logs"`
		LogsCut       *record.LogsCut  `json:"logsCut,omitempty"`
		Stats         record.Stats     `json:"stats"`
		Receipt       record.Receipt   `json:"receipt"`
		EventsDropped int64            `json:"eventsDropped,omitempty"`
	}{r.rec.Logs, r.rec.LogsCut, r.rec.Stats, r.rec.Receipt, r.rec.EventsDropped})
	if err != nil {
		return nil, err
	}
	return append([]byte{','}, b[1:len(b)-1]...), nil
}

// withRecord splices the record's members into the JSON object obj.
func (r *recordOptions) withRecord(obj []byte) ([]byte, error) {
	m, err := r.jsonMembers()
	if err != nil || len(m) == 0 || len(obj) < 2 || obj[len(obj)-1] != '}' {
		return obj, err
	}
	out := append([]byte(nil), obj[:len(obj)-1]...)
	out = append(out, m...)
	return append(out, '}'), nil
}

// linePrinter writes the script's lines on stderr, one at a time: plain
// for info, prefixed by the level otherwise ("warn: …").
type linePrinter struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *linePrinter) print(l record.LogLine) {
	text := strings.ReplaceAll(l.Text, "\n", "\n  ")
	if l.Level == spi.LevelInfo {
		p.printf("%s\n", text)
		return
	}
	p.printf("%s: %s\n", l.Level, text)
}

func (p *linePrinter) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format, args...)
}
