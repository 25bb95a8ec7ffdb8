package mcpserver

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/pool"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

// args are a run tool's arguments, checked.
type args struct {
	script string
	input  json.RawMessage // JSON text; "null" when not given
	limits spi.Limits      // the run's, within the ceiling (pool.Clamp)
	files  []spi.File      // the input files, for the effect to check (files.go)
}

// wireArgs is how a run tool's arguments arrive.
type wireArgs struct {
	Script *string         `json:"script"`
	Input  json.RawMessage `json:"input"`
	Limits *wireLimits     `json:"limits"`
	Files  []spi.File      `json:"files"`
}

// wireLimits are a call's own limits.
type wireLimits struct {
	TimeoutMs   *int64 `json:"timeoutMs"`
	MemoryBytes *int64 `json:"memoryBytes"`
}

// decodeArgs decodes and checks a run tool's arguments against the
// server's limits. It returns a problem, written for the model that made
// the call, when they are wrong; the script's text never appears in it.
func decodeArgs(raw json.RawMessage, lim limits) (args, string) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return args{}, `the arguments are missing: call the tool with {"script": "<source text>", "input": <any JSON value>}`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var w wireArgs
	if err := dec.Decode(&w); err != nil {
		return args{}, argumentProblem(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return args{}, "the arguments must be one JSON object"
	}
	if w.Script == nil {
		return args{}, `the argument "script" is required: the program's source text, as a string`
	}
	a := args{script: *w.Script, input: w.Input, files: w.Files}
	if len(a.input) == 0 {
		a.input = json.RawMessage("null")
	}
	// The wire asks for positive numbers; the ceiling is every door's
	// (pool.Clamp), in this door's words.
	var asked spi.Limits
	if w.Limits != nil {
		if ms := w.Limits.TimeoutMs; ms != nil {
			if *ms <= 0 {
				return args{}, "limits.timeoutMs must be a positive whole number of milliseconds"
			}
			asked.WallClock = millis(*ms)
		}
		if n := w.Limits.MemoryBytes; n != nil {
			if *n <= 0 {
				return args{}, "limits.memoryBytes must be a positive whole number of bytes"
			}
			asked.MemoryBytes = *n
		}
	}
	limits, err := pool.Clamp(lim.ceiling(), asked)
	var le *pool.LimitError
	switch {
	case err == nil:
		a.limits = limits
		return a, ""
	case !errors.As(err, &le):
		return args{}, oneLine(err.Error())
	case le.Kind == record.LimitWallClock:
		ceiling := lim.wallClock.Milliseconds()
		return args{}, fmt.Sprintf("limits.timeoutMs is %d, above the server's wall-clock limit of %d ms: a call's limits may only lower the server's (leave timeoutMs out to get %d ms)", *w.Limits.TimeoutMs, ceiling, ceiling)
	}
	return args{}, fmt.Sprintf("limits.memoryBytes is %d, above the server's memory limit of %d bytes: a call's limits may only lower the server's (leave memoryBytes out to get %d bytes)", *w.Limits.MemoryBytes, lim.memoryBytes, lim.memoryBytes)
}

// millis is ms milliseconds, saturating at the largest duration.
func millis(ms int64) time.Duration {
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// argumentProblem words a decoding error for the model.
func argumentProblem(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te) && te.Field == "":
		return `the arguments must be a JSON object: {"script": "<source text>", "input": <any JSON value>}`
	case errors.As(err, &te):
		want := "a string"
		switch {
		case strings.HasPrefix(te.Field, "limits."):
			want = "a whole number"
		case te.Field == "limits":
			want = `an object such as {"timeoutMs": 1000}`
		case strings.HasPrefix(te.Field, "files"):
			want = `an array of {"name": "data.csv", "data": "<the bytes in base64>"}`
		}
		return fmt.Sprintf("the argument %q must be %s, not a JSON %s", effect.Excerpt(te.Field), want, te.Value)
	case errors.As(err, new(base64.CorruptInputError)):
		return "a file's data must be its bytes in base64 (standard alphabet, with padding)"
	case errors.As(err, &se):
		return fmt.Sprintf("the arguments are not valid JSON (at byte %d)", se.Offset)
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fmt.Sprintf("unknown argument %s: the arguments are script, input, limits (timeoutMs, memoryBytes) and files ([{name, data}])", effect.Excerpt(f))
	}
	return "the arguments could not be read: " + effect.Excerpt(msg)
}

// boundTo cuts s to at most n bytes, on a rune boundary, marking a cut.
func boundTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// oneLine folds s onto one line.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", "; ", "\n", "; ", "\r", "; ").Replace(strings.TrimSpace(s))
}
