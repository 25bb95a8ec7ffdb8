//go:build linux

package python

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/sandbank/sandbank/spi"
)

// FuzzSession feeds the host's reader of the runner's frames whatever
// bytes a script could write there. It always ends with one account of
// the run; a request report after the start frame is never believed; a
// value is JSON; a thrown error has a name; output files end the run
// only after the start frame; nothing is buffered past a
// frame's bound (a frame the fuzzer claims larger is refused before it
// is read).
func FuzzSession(f *testing.F) {
	frame := func(kind byte, payload string) string {
		n := len(payload)
		return string([]byte{kind, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}) + payload
	}
	for _, seed := range []string{
		frame('S', "") + frame('V', "42"),
		frame('S', "") + frame('L', "io"+"line") + frame('C', "\x01f"+"[1]") + frame('T', "\x05Error"+"boom"),
		frame('M', "i"),
		frame('S', "") + frame('M', "i"),
		frame('S', "") + frame('T', "\x00"),
		frame('S', "") + "V\x7f\xff\xff\xff",
		`{"t":"input"}` + "\n",
		frame('S', "") + frame('V', "[1,"),
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Skip(err)
		}
		go func() {
			_, _ = w.Write(data)
			w.Close()
		}()
		const bound = 1 << 16
		p := &proc{out: r, started: make(chan struct{}), ended: make(chan ending, 1), frameMax: bound, answers: newAnswers(1 << 30)}
		p.session(context.Background(), spi.Request{Host: echoHost{}})
		r.Close() // a writer still blocked ends with EPIPE
		e := <-p.ended
		started := false
		select {
		case <-p.started:
			started = true
		default:
		}
		switch e.kind {
		case endRequest:
			if started {
				t.Fatalf("a request report after the start frame was believed")
			}
		case endValue:
			if !started || !json.Valid(e.value) || len(e.value) > bound {
				t.Fatalf("value %q (started %v) accepted", e.value, started)
			}
		case endThrew:
			if !started || e.name == "" || len(e.message) > maxErrorTextBytes {
				t.Fatalf("thrown %q %q (started %v) accepted", e.name, e.message, started)
			}
		case endFiles:
			if !started {
				t.Fatalf("output files past their bound before the start frame were believed")
			}
		case endNone, endBroken:
		default:
			t.Fatalf("ending kind %d", e.kind)
		}
	})
}
