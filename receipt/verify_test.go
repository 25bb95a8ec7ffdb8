package receipt

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/canon"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// verifyRun is a real run's record with the script and the input it ran.
type verifyRun struct {
	name   string
	rec    *effect.Record
	script []byte
	input  json.RawMessage
}

// realRuns runs scripts through the effect over fake backends, one run
// per outcome kind: ok, every failure code (limitExceeded with every
// limit kind), infrastructure and canceled.
func realRuns(t testing.TB) map[string]verifyRun { return realRunsSignedBy(t, nil) }

// realRunsSignedBy is realRuns through effects that sign with s (none
// when s is nil).
func realRunsSignedBy(t testing.TB, s record.Signer) map[string]verifyRun {
	t.Helper()
	signing := func(o *effect.Options) *effect.Options {
		c := effect.Options{}
		if o != nil {
			c = *o
		}
		c.Signer = s
		return &c
	}
	runs := map[string]verifyRun{}
	add := func(name string, e *effect.Effect, ctx context.Context, call effect.Call, script []byte) {
		t.Helper()
		rec, _ := e.Run(ctx, call)
		require.NotNil(t, rec, name)
		runs[name] = verifyRun{name: name, rec: rec, script: script, input: call.Input.(json.RawMessage)}
	}
	run := func(name string, b fakebackend.Behavior, opts *effect.Options, call effect.Call) {
		t.Helper()
		f := newFixture(t, b, signing(opts))
		if call.Script == "" {
			call.Script = f.addr
		}
		if call.Input == nil {
			call.Input = json.RawMessage(`{"n":1}`)
		}
		add(name, f.e, context.Background(), call, testScript)
	}
	run("ok", logThen(okOutcome(`{"b":1, "a":[1,2]}`), "a line"), &effect.Options{Engine: "fake"}, effect.Call{})
	run("scriptError", fakebackend.Return(spi.Threw("TypeError", "boom")), nil, effect.Call{})
	for _, k := range []spi.LimitKind{spi.LimitCPU, spi.LimitMemory, spi.LimitWallClock} {
		run("limitExceeded "+k.String(), fakebackend.Return(spi.Limited(k)), nil, effect.Call{})
	}
	run("limitExceeded output", fakebackend.Return(okOutcome(`"too long"`)), &effect.Options{MaxOutputBytes: 4}, effect.Call{})
	run("inputTooLarge input", fakebackend.Echo(), &effect.Options{MaxInputBytes: 4}, effect.Call{Input: json.RawMessage(`"much too long"`)})
	run("inputTooLarge memory", fakebackend.Return(spi.InputTooLarge()), nil, effect.Call{})
	run("scriptTooLarge", fakebackend.Echo(), &effect.Options{MaxScriptBytes: 2}, effect.Call{})
	run("shapeMismatch", fakebackend.Return(okOutcome(`1`)), nil, effect.Call{Shape: json.RawMessage(`{"type":"string"}`)})
	run("inputNotSerializable", fakebackend.Echo(), nil, effect.Call{Input: json.RawMessage(`{"n":`)})
	run("infrastructure", logThen(spi.Infrastructure("engine fell over"), "last words"), nil, effect.Call{})

	f := newFixture(t, fakebackend.Echo(), signing(nil))
	elsewhere := []byte("elsewhere")
	add("scriptMissing", f.e, context.Background(), effect.Call{Script: record.AddressOf(elsewhere), Input: json.RawMessage(`1`)}, elsewhere)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f = newFixture(t, func(context.Context, spi.Request) (spi.Outcome, error) {
		cancel()
		return okOutcome(`1`), nil
	}, signing(nil))
	add("canceled", f.e, ctx, effect.Call{Script: f.addr, Input: json.RawMessage(`null`)}, testScript)

	caps := fakebackend.Capabilities()
	caps.HostCalls = true
	hostScript := []byte("host script")
	e, err := effect.New(new(storage.MemoryStore), fakebackend.New(caps, callHostTwice),
		signing(&effect.Options{MaxHostCalls: 1, Host: effect.HostFuncs{"f": echoHost}}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	add("limitExceeded hostCalls", e, context.Background(),
		effect.Call{Source: hostScript, Input: json.RawMessage(`{}`)}, hostScript)

	// Durable runs, on an engine that declares Deterministic: one whose
	// host function suspends it, one whose replay log holds another call.
	caps.Deterministic = true
	suspend := func(context.Context, json.RawMessage) (any, error) { return nil, effect.Suspend("wait") }
	e, err = effect.New(new(storage.MemoryStore), fakebackend.New(caps, callHostTwice), signing(&effect.Options{Host: effect.HostFuncs{"f": suspend}}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	durable := func(replay ...record.HostCall) *effect.Durable {
		return &effect.Durable{Replay: replay, MaxSuspensions: 1, MaxLogBytes: 1 << 10}
	}
	add("suspended", e, context.Background(), effect.Call{Source: hostScript, Input: json.RawMessage(`{}`), Durable: durable()}, hostScript)
	add("replayDiverged", e, context.Background(), effect.Call{Source: hostScript, Input: json.RawMessage(`{}`),
		Durable: durable(record.HostCall{Name: "f", Args: json.RawMessage(`1`), Outcome: record.HostCallOK, Answer: json.RawMessage(`2`)})}, hostScript)
	return runs
}

// Records produced by real runs of every outcome kind verify, as they are
// and after a JSON round trip, and their receipts verify alone.
func TestVerifyRealRecords(t *testing.T) {
	outcomes := map[string]bool{}
	for _, run := range realRuns(t) {
		t.Run(run.name, func(t *testing.T) {
			outcomes[run.rec.Receipt.Outcome] = true
			require.NoError(t, Verify(run.rec, run.script, run.input))
			require.NoError(t, VerifyReceipt(run.rec.Receipt, run.script, run.input))
			b, err := json.Marshal(run.rec)
			require.NoError(t, err)
			var back effect.Record
			require.NoError(t, json.Unmarshal(b, &back))
			require.NoError(t, Verify(&back, run.script, run.input), "%s", b)
		})
	}
	want := []string{record.OutcomeOK, record.OutcomeInfrastructure, record.OutcomeCanceled}
	for c := record.Code(1); c.Valid(); c++ {
		want = append(want, c.String())
	}
	for _, o := range want {
		assert.True(t, outcomes[o], "no real run with outcome %s", o)
	}
}

// Each rule of Verify refuses a real record with one field tampered, with
// a reason naming the field; the receipt's own rules refuse the receipt
// alone too.
func TestVerifyRefusesTamperedRecords(t *testing.T) {
	runs := realRuns(t)
	redigest := func(r *effect.Record) {
		d, err := canon.DigestJSON(r.Failure)
		require.NoError(t, err)
		r.Receipt.OutputDigest = d
	}
	tests := []struct {
		name    string
		base    string
		change  func(r *effect.Record)
		want    string
		receipt bool // VerifyReceipt refuses it too
	}{
		{"format", "ok", func(r *effect.Record) { r.Receipt.Format = "other/2" }, "receipt format", true},
		{"script not an address", "ok", func(r *effect.Record) { r.Receipt.Script = "sha256:nope" }, "script \"sha256:nope\" is not a content address", true},
		{"no script", "scriptError", func(r *effect.Record) { r.Receipt.Script = "" }, "is not a content address", true},
		{"another script", "ok", func(r *effect.Record) { r.Receipt.Script = record.AddressOf([]byte("x")) }, "the script's address", true},
		{"another input", "ok", func(r *effect.Record) { r.Receipt.InputDigest = canon.Digest([]byte("2")) }, "the input's digest", true},
		{"no input digest", "scriptError", func(r *effect.Record) { r.Receipt.InputDigest = "" }, "the input's digest", true},
		{"input digest of an input that cannot be serialised", "inputNotSerializable",
			func(r *effect.Record) { r.Receipt.InputDigest = canon.Digest([]byte("1")) }, "has an inputDigest", true},
		{"inputNotSerializable for an input that serialises", "scriptError", func(r *effect.Record) {
			r.Receipt.Outcome = "inputNotSerializable"
			r.Failure = &effect.Failure{Code: record.CodeInputNotSerializable, Reason: "no"}
			redigest(r)
		}, "but the input serialises", true},
		{"outcome outside the vocabulary", "ok", func(r *effect.Record) { r.Receipt.Outcome = "fine" },
			`outcome "fine" is not one of ok, inputNotSerializable, inputTooLarge, scriptMissing, limitExceeded, scriptError, shapeMismatch, scriptTooLarge, suspended, replayDiverged, infrastructure, canceled`, true},
		{"no outcome", "ok", func(r *effect.Record) { r.Receipt.Outcome = "" }, "is not one of", true},
		{"limitExceeded with no failure and no digest", "ok", func(r *effect.Record) {
			r.Value, r.Receipt.OutputDigest, r.Receipt.Outcome = nil, "", "limitExceeded"
		}, "outcome limitExceeded has an output, but it has no outputDigest", true},
		{"limitExceeded with no failure", "ok", func(r *effect.Record) {
			r.Value, r.Receipt.Outcome, r.Receipt.LimitKind = nil, "limitExceeded", "cpu"
		}, "outcome limitExceeded without a failure", false},
		{"scriptError with no failure and no digest", "infrastructure", func(r *effect.Record) {
			r.Receipt.Outcome = "scriptError"
		}, "outcome scriptError has an output, but it has no outputDigest", true},
		{"ok with a limit kind", "ok", func(r *effect.Record) { r.Receipt.LimitKind = "cpu" }, "limitKind cpu does not go with outcome ok", true},
		{"canceled with a limit kind", "canceled", func(r *effect.Record) { r.Receipt.LimitKind = "memory" }, "limitKind memory does not go with outcome canceled", true},
		{"limit kind outside the vocabulary", "limitExceeded cpu", func(r *effect.Record) { r.Receipt.LimitKind = "disk" },
			`limitKind "disk" is not one of cpu, memory, wallClock, output, input, hostCalls`, true},
		{"limitExceeded without a limit kind", "limitExceeded cpu", func(r *effect.Record) { r.Receipt.LimitKind = "" }, "outcome limitExceeded has no limitKind", true},
		{"limitExceeded by the input ceiling", "limitExceeded cpu", func(r *effect.Record) {
			r.Receipt.LimitKind, r.Failure.Kind = "input", record.LimitInput
			redigest(r)
		}, "limitKind input does not go with outcome limitExceeded", true},
		{"scriptError with a limit kind", "scriptError", func(r *effect.Record) {
			r.Receipt.LimitKind, r.Failure.Kind = "cpu", record.LimitCPU
		}, "limitKind cpu does not go with outcome scriptError", true},
		{"limit kind other than the failure's", "limitExceeded cpu", func(r *effect.Record) { r.Receipt.LimitKind = "memory" }, `limit kind "memory", the failure's is "cpu"`, false},
		{"ok without an output digest", "ok", func(r *effect.Record) { r.Receipt.OutputDigest = "" }, "no outputDigest", true},
		{"output digest not a digest", "scriptError", func(r *effect.Record) { r.Receipt.OutputDigest = "sha256:zz" }, `outputDigest "sha256:zz" is not a sha256 digest`, true},
		{"infrastructure with an output digest", "infrastructure", func(r *effect.Record) { r.Receipt.OutputDigest = canon.Digest([]byte("1")) },
			"outcome infrastructure has no output, but it has an outputDigest", true},
		{"infrastructure with a value", "infrastructure", func(r *effect.Record) { r.Value = json.RawMessage(`1`) }, `outcome "infrastructure" with a value`, false},
		{"canceled with a failure", "canceled", func(r *effect.Record) { r.Failure = &effect.Failure{Code: record.CodeScriptError} }, `outcome "canceled" with a failure`, false},
		{"another value", "ok", func(r *effect.Record) { r.Value = json.RawMessage(`{"a":[1,2],"b":2}`) }, "the value's digest", false},
		{"value not canonical", "ok", func(r *effect.Record) { r.Value = json.RawMessage(`{ "a":[1,2],"b":1}`) }, "not canonical", false},
		{"value over the output limit", "ok", func(r *effect.Record) { r.Receipt.Limits.MaxOutputBytes = 4 }, "over the receipt's maxOutputBytes 4", false},
		{"ok without a value", "ok", func(r *effect.Record) { r.Value = nil }, "outcome ok without a value", false},
		{"ok with a failure", "ok", func(r *effect.Record) { r.Failure = &effect.Failure{Code: record.CodeScriptError} }, `outcome "ok" with a failure`, false},
		{"ok with an error text", "ok", func(r *effect.Record) { r.Error = "engine fell over" }, "outcome ok with an error text", false},
		{"failure of another code", "limitExceeded cpu", func(r *effect.Record) {
			r.Failure = &effect.Failure{Code: record.CodeScriptError, Message: "boom"}
		}, "outcome limitExceeded, the failure's code is scriptError", false},
		{"failure text changed", "scriptError", func(r *effect.Record) { r.Failure.Message = "BOOM" }, "the failure's digest", false},
		{"name on limitExceeded", "limitExceeded cpu", func(r *effect.Record) { r.Failure.Name = "TypeError" }, "the failure's name does not go with code limitExceeded", false},
		{"reason on scriptError", "scriptError", func(r *effect.Record) { r.Failure.Reason = "why" }, "the failure's reason does not go with code scriptError", false},
		{"bytes on scriptError", "scriptError", func(r *effect.Record) { r.Failure.Bytes = 3 }, "the failure's bytes does not go with code scriptError", false},
		{"limit on limitExceeded memory", "limitExceeded memory", func(r *effect.Record) { r.Failure.Limit = 3 }, "the failure's limit does not go with code limitExceeded", false},
		{"script on inputTooLarge", "inputTooLarge input", func(r *effect.Record) { r.Failure.Script = record.AddressOf(nil) }, "the failure's script does not go with code inputTooLarge", false},
		{"input ceiling other than the receipt's", "inputTooLarge input", func(r *effect.Record) { r.Receipt.Limits.MaxInputBytes = 100 }, "the receipt's maxInputBytes 100", false},
		{"input under its ceiling", "inputTooLarge input", func(r *effect.Record) { r.Failure.Bytes = 2; redigest(r) }, "the failure's input of 2 bytes over a limit of 4", false},
		{"memory limit other than the receipt's", "inputTooLarge memory", func(r *effect.Record) { r.Receipt.Limits.MemoryBytes = 100 }, "is not the receipt's memoryBytes 100", false},
		{"script size other than the script's", "scriptTooLarge", func(r *effect.Record) { r.Failure.Bytes = 3; redigest(r) }, "the script's 5 bytes", false},
		{"negative sizes", "scriptTooLarge", func(r *effect.Record) { r.Failure.Bytes = -1; redigest(r) }, "the failure's bytes or limit is negative", false},
		{"missing script other than the receipt's", "scriptMissing", func(r *effect.Record) { r.Failure.Script = record.AddressOf(nil); redigest(r) }, "is not the receipt's", false},
		{"no engine", "ok", func(r *effect.Record) { r.Receipt.Engine = "" }, "the receipt names no engine", true},
		{"backend not path@version", "ok", func(r *effect.Record) { r.Receipt.Backend = "sandbank" }, `backend "sandbank" is not path@version`, true},
		{"spi version", "ok", func(r *effect.Record) { r.Receipt.SPIVersion = "1.x" }, `spiVersion "1.x" is not MAJOR.MINOR.PATCH`, true},
		{"no spi version", "ok", func(r *effect.Record) { r.Receipt.SPIVersion = "" }, "is not MAJOR.MINOR.PATCH", true},
		{"capabilities", "ok", func(r *effect.Record) { r.Receipt.Capabilities.Language = "" }, "the receipt's capabilities are invalid: spi: capabilities: empty language", true},
		{"capabilities' wall clock", "ok", func(r *effect.Record) { r.Receipt.Capabilities.WallClock = 0 }, "the receipt's capabilities are invalid", true},
		{"negative limit", "ok", func(r *effect.Record) { r.Receipt.Limits.MemoryBytes = -1 }, "the receipt's limit memoryBytes is negative", true},
		{"negative log lines", "ok", func(r *effect.Record) { r.Receipt.Limits.MaxLogLines = -1 }, "the receipt's limit maxLogLines is negative", true},
		{"no start time", "ok", func(r *effect.Record) { r.Receipt.Started = time.Time{} }, "the receipt has no start time", true},
		{"negative duration", "ok", func(r *effect.Record) { r.Receipt.Duration = -1 }, "the receipt's durationNs is negative", true},
		{"start time that cannot be written", "ok", func(r *effect.Record) { r.Receipt.Started = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, "cannot be written as canonical JSON", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, ok := runs[tt.base]
			require.True(t, ok, tt.base)
			rec := *base.rec
			if rec.Failure != nil {
				f := *rec.Failure
				rec.Failure = &f
			}
			tt.change(&rec)
			err := Verify(&rec, base.script, base.input)
			require.ErrorIs(t, err, ErrRecordMismatch)
			assert.ErrorContains(t, err, tt.want)
			err = VerifyReceipt(rec.Receipt, base.script, base.input)
			if tt.receipt {
				require.ErrorIs(t, err, ErrRecordMismatch)
				assert.ErrorContains(t, err, tt.want)
			} else {
				assert.NoError(t, err, "the receipt alone is consistent")
			}
		})
	}
}

// A reason quotes text from the record bounded, however long the text.
func TestVerifyReasonsAreBounded(t *testing.T) {
	run := realRuns(t)["ok"]
	rec := *run.rec
	long := strings.Repeat("x", 1<<20)
	r := &rec.Receipt
	r.Format, r.Outcome, r.LimitKind, r.Backend, r.SPIVersion = long, long, long, long, long
	r.Script, r.InputDigest, r.OutputDigest = record.Address(long), long, long
	err := Verify(&rec, run.script, run.input)
	require.ErrorIs(t, err, ErrRecordMismatch)
	assert.Less(t, len(err.Error()), 64<<10)
}
