package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandbank/sandbank/effect"
)

// Result is the structured content of a run tool's result: what the
// model's client receives beside the same facts as text. It encodes and
// decodes with encoding/json.
//
// Exactly one of Value (OK true), Failure and InvalidCall is set.
type Result struct {
	// OK is true when the script returned a value.
	OK bool `json:"ok"`
	// Value is the script's result as canonical JSON text (compact, keys
	// sorted).
	Value json.RawMessage `json:"value,omitempty"`
	// Failure is the script's typed failure, as the effect reports it:
	// {"code":"scriptError","name":"TypeError","message":"…"},
	// {"code":"limitExceeded","kind":"wallClock"}, ….
	Failure *effect.Failure `json:"failure,omitempty"`
	// InvalidCall says what was wrong with the call's arguments; the
	// script did not run.
	InvalidCall string `json:"invalidCall,omitempty"`
	// Hint tells the model what to do about a failure.
	Hint string `json:"hint,omitempty"`
	// Logs are the lines the script logged, bounded (never null).
	Logs []effect.LogLine `json:"logs"`
	// LogsCut counts the lines dropped once the log was full.
	LogsCut *effect.LogsCut `json:"logsCut,omitempty"`
	// Stats are the run's figures; absent when the script did not run.
	Stats *effect.Stats `json:"stats,omitempty"`
	// HostCalls lists the script's host calls (Options.Host's functions)
	// in the order it issued them: name, timing, bytes and outcome
	// (effect.Record.HostCalls); absent when it made none.
	HostCalls []effect.HostCall `json:"hostCalls,omitempty"`
	// Engine is the engine that ran the script.
	Engine string `json:"engine"`
	// Receipt ties the result to the script, input, engine and limits
	// that produced it ('sandbank verify' checks one).
	Receipt *effect.Receipt `json:"receipt,omitempty"`
	// Run is the id under which Options.Receipts keeps the receipt, and
	// a suspended run is kept; absent without Options.Receipts, unless
	// the run suspended.
	Run string `json:"run,omitempty"`
	// Waiting is set when the run suspended (Failure's code suspended):
	// the host call it waits at. resume_run continues it.
	Waiting *Waiting `json:"waiting,omitempty"`
}

// answer is how the MCP door answers a kind of error.
type answer int

const (
	answerFailure        answer = iota + 1 // an IsError result carrying the typed failure
	answerInvalid                          // an IsError result saying what was wrong with the call
	answerClosed                           // the protocol error errClosed
	answerContext                          // the context's error, as a protocol error
	answerInfrastructure                   // a protocol error, retryable
	answerQuota                            // the protocol error CodeQuota, retryable later
)

// answers is the MCP door's table from the effect's kind of an error to
// its answer (a test proves it covers effect.Kinds()).
var answers = map[effect.Kind]answer{
	effect.KindFailure:          answerFailure,
	effect.KindInvalidCall:      answerInvalid,
	effect.KindClosed:           answerClosed,
	effect.KindCanceled:         answerContext,
	effect.KindDeadlineExceeded: answerContext,
	effect.KindOverloaded:       answerInfrastructure,
	effect.KindInfrastructure:   answerInfrastructure,
	effect.KindQuota:            answerQuota,
}

// answerOf returns the answer to err, looked up by effect.KindOf.
func answerOf(err error) answer {
	if a, ok := answers[effect.KindOf(err)]; ok {
		return a
	}
	return answerInfrastructure
}

// toResult maps a run to the tool's answer: a value or a typed failure is
// a result (IsError for the failure), an invalid call is an IsError result
// too (the model made the call and can correct it), and an infrastructure
// error or a cancellation is a protocol error.
func toResult(engine string, lim limits, rec *effect.Record, err error) (*mcp.CallToolResult, error) {
	if err == nil {
		if rec == nil {
			return nil, fmt.Errorf("mcpserver: engine %s: the run produced no record", engine)
		}
		r := fromRecord(engine, rec)
		r.OK, r.Value = true, rec.Value
		return &mcp.CallToolResult{Content: text(r), StructuredContent: r}, nil
	}
	switch answerOf(err) {
	case answerFailure:
		var f *effect.Failure
		errors.As(err, &f)
		r := Result{Engine: engine, Failure: f, Logs: []effect.LogLine{}}
		if rec != nil {
			r = fromRecord(engine, rec)
			r.Failure = f
		}
		r.Hint = hint(f, lim, rec)
		return &mcp.CallToolResult{Content: text(r), StructuredContent: r, IsError: true}, nil
	case answerContext:
		return nil, err
	case answerClosed:
		return nil, errClosed
	case answerInvalid:
		return invalidResult(engine, strings.TrimPrefix(oneLine(err.Error()), "effect: ")), nil
	case answerQuota:
		return nil, quotaError(err)
	default:
		return nil, fmt.Errorf("mcpserver: engine %s failed (infrastructure, retryable): %s", engine, boundTo(oneLine(err.Error()), 1024))
	}
}

// CodeQuota is the JSON-RPC error code of a call refused because its
// caller is at a quota of its own (effect.KindQuota, such as a tenant's
// runs in flight at their cap): the script did not run, and the same
// call may succeed later. The error's data is {"kind": "quota",
// "retryable": true}: the kind and retryable of the Problem the HTTP door
// answers the same refusal with. (JSON-RPC leaves -32000 to -32099 to
// the server; this one echoes HTTP's 429.)
const CodeQuota = -32029

// quotaError is the answer to a call refused for its caller's quota.
func quotaError(err error) error {
	data, merr := json.Marshal(struct {
		Kind      string `json:"kind"`
		Retryable bool   `json:"retryable"`
	}{effect.KindQuota.String(), effect.KindQuota.Retryable()})
	if merr != nil {
		panic(merr) // a string and a bool always marshal
	}
	return &jsonrpc.Error{Code: CodeQuota, Message: "mcpserver: " + boundTo(oneLine(err.Error()), 1024), Data: data}
}

// invalidResult is the answer to arguments the server refuses.
func invalidResult(engine, problem string) *mcp.CallToolResult {
	r := Result{
		Engine:      engine,
		InvalidCall: problem,
		Hint:        "The script did not run. Correct the arguments and call the tool again.",
		Logs:        []effect.LogLine{},
	}
	return &mcp.CallToolResult{Content: text(r), StructuredContent: r, IsError: true}
}

func fromRecord(engine string, rec *effect.Record) Result {
	stats, receipt := rec.Stats, rec.Receipt
	r := Result{Engine: engine, Logs: rec.Logs, LogsCut: rec.LogsCut, Stats: &stats, HostCalls: rec.HostCalls, Receipt: &receipt}
	if r.Logs == nil {
		r.Logs = []effect.LogLine{}
	}
	return r
}

// hint says what a model can do about a failure, with the run's own
// limits where the record has them.
func hint(f *effect.Failure, lim limits, rec *effect.Record) string {
	wall, mem, out := lim.wallClock, lim.memoryBytes, lim.maxOutput
	if rec != nil {
		wall, mem, out = rec.Receipt.Limits.WallClock, rec.Receipt.Limits.MemoryBytes, rec.Receipt.Limits.MaxOutputBytes
	}
	switch f.Code {
	case effect.CodeScriptError:
		return "The script threw an error or did not compile. Read the error's name and message, fix the script, and call the tool again."
	case effect.CodeLimitExceeded:
		switch f.Kind {
		case effect.LimitWallClock:
			return fmt.Sprintf("The script did not finish within its wall-clock limit of %s and was stopped. Look for an endless loop, or make the script do less work.", wall)
		case effect.LimitMemory:
			return fmt.Sprintf("The script needed more than its memory limit of %s. Build smaller values, or work on the input in parts.", humanize.IBytes(uint64(mem)))
		case effect.LimitCPU:
			return "The script used up its CPU budget. Look for an endless loop, or make the script do less work."
		case effect.LimitOutput:
			return fmt.Sprintf("The result is over %s of JSON, or nested deeper than %d levels. Return a smaller result.", humanize.IBytes(uint64(out)), effect.MaxOutputDepth)
		}
	case effect.CodeInputTooLarge:
		return "The input is too large for this server. Pass a smaller input, or let the script compute what it needs."
	case effect.CodeScriptTooLarge:
		return "The script is too large for this server. Write a shorter script."
	}
	return "Correct the call and try again."
}

// text is the result as the model reads it.
func text(r Result) []mcp.Content {
	var b strings.Builder
	switch {
	case r.OK:
		b.WriteString("The script returned:\n")
		b.Write(r.Value)
		b.WriteString("\n")
	case r.Failure != nil:
		fmt.Fprintf(&b, "The script failed: %s\n", strings.TrimPrefix(r.Failure.Error(), "effect: "))
	default:
		fmt.Fprintf(&b, "The call was refused: %s\n", r.InvalidCall)
	}
	if r.Hint != "" {
		fmt.Fprintf(&b, "%s\n", r.Hint)
	}
	if r.Stats != nil {
		writeLogs(&b, r.Logs, r.LogsCut)
		writeStats(&b, r.Stats)
	}
	fmt.Fprintf(&b, "Engine: %s.\n", r.Engine)
	return []mcp.Content{&mcp.TextContent{Text: b.String()}}
}

func writeLogs(b *strings.Builder, logs []effect.LogLine, cut *effect.LogsCut) {
	if len(logs) == 0 && cut == nil {
		b.WriteString("Logs: none.\n")
		return
	}
	fmt.Fprintf(b, "Logs (%d lines):\n", len(logs))
	for _, l := range logs {
		fmt.Fprintf(b, "[%s] %s\n", l.Level, l.Text)
	}
	if cut != nil {
		fmt.Fprintf(b, "… %d more lines (%s) were dropped: the log was full.\n", cut.Lines, humanize.IBytes(uint64(cut.Bytes)))
	}
}

func writeStats(b *strings.Builder, s *effect.Stats) {
	fmt.Fprintf(b, "Stats: %s in all", roundDuration(s.Duration))
	if s.BackendTime > 0 {
		fmt.Fprintf(b, ", %s in the engine", roundDuration(s.BackendTime))
	}
	fmt.Fprintf(b, "; input %d bytes, script %d bytes, output %d bytes", s.InputBytes, s.ScriptBytes, s.OutputBytes)
	if s.MemoryPeakBytes > 0 {
		fmt.Fprintf(b, "; memory peak %s", humanize.IBytes(uint64(s.MemoryPeakBytes)))
	}
	if s.CPUUnits > 0 {
		fmt.Fprintf(b, "; %d %s", s.CPUUnits, s.CPUUnit)
	}
	b.WriteString(".\n")
}

// roundDuration keeps a duration readable: milliseconds, or microseconds
// below one.
func roundDuration(d time.Duration) time.Duration {
	if d >= time.Millisecond {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}
