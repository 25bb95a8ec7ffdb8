package effect

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/internal/textbound"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

// TestMain fails the package's tests when a goroutine outlives them: the
// effect must leave nothing running once every backend has returned.
// (goleak checks once m.Run has returned, so it does not run while a fuzz
// target is being fuzzed.)
//
// When fuzzing, it also shortens the fuzzer's minimization of each new
// input from Go's default of 60 s to fuzzMinimizeTime, unless
// -fuzzminimizetime is given: on two loaded cores, minimizing one input of
// a few hundred bytes took 7 s, during which that worker runs nothing new,
// and with both workers minimizing the fuzzer reports 0 execs/s.
func TestMain(m *testing.M) {
	flag.Parse()
	if flag.Lookup("test.fuzz").Value.String() != "" && !flagGiven("test.fuzzminimizetime") {
		if err := flag.Set("test.fuzzminimizetime", fuzzMinimizeTime); err != nil {
			panic(err)
		}
	}
	goleak.VerifyTestMain(m)
}

// fuzzMinimizeTime is the minimization bound TestMain sets when fuzzing.
const fuzzMinimizeTime = "1s"

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// testScript is the script every test stores; the fake backend never runs
// it.
var testScript = []byte("input")

// memoryStore is the tests' script store: package storage's MemoryStore
// is out of reach here (storage imports effect). It answers at once, as
// that one does (InstantReader).
type memoryStore struct {
	mu sync.Mutex
	m  map[record.Address][]byte
}

func newMemoryStore() *memoryStore { return &memoryStore{m: map[record.Address][]byte{}} }

func (s *memoryStore) Put(b []byte) (record.Address, error) {
	addr := record.AddressOf(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[addr] = append([]byte{}, b...)
	return addr, nil
}

func (s *memoryStore) ReadsInstantly() {}

func (s *memoryStore) ReadScript(ctx context.Context, addr record.Address) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[addr]
	if !ok {
		return nil, fmt.Errorf("effect test store: script %s: %w", addr, fs.ErrNotExist)
	}
	return append([]byte{}, b...), nil
}

// countingReader wraps a ScriptReader and counts reads.
type countingReader struct {
	ScriptReader
	reads atomic.Int64
}

func (r *countingReader) ReadScript(ctx context.Context, addr record.Address) ([]byte, error) {
	r.reads.Add(1)
	return r.ScriptReader.ReadScript(ctx, addr)
}

// readerFunc adapts a function to ScriptReader.
type readerFunc func(ctx context.Context, addr record.Address) ([]byte, error)

func (f readerFunc) ReadScript(ctx context.Context, addr record.Address) ([]byte, error) {
	return f(ctx, addr)
}

// fixture is an effect over a fake backend and a counting memory store
// holding testScript.
type fixture struct {
	e      *Effect
	fb     *fakebackend.Backend
	reader *countingReader
	addr   record.Address
}

func newFixture(t testing.TB, b fakebackend.Behavior, opts *Options) *fixture {
	t.Helper()
	store := newMemoryStore()
	addr, err := store.Put(testScript)
	require.NoError(t, err)
	fb := fakebackend.New(fakebackend.Capabilities(), b)
	reader := &countingReader{ScriptReader: store}
	e, err := New(reader, fb, opts)
	require.NoError(t, err)
	return &fixture{e: e, fb: fb, reader: reader, addr: addr}
}

// call evaluates with input and the fixture's script.
func (f *fixture) call(ctx context.Context, input any) (json.RawMessage, error) {
	return f.e.Evaluate(ctx, Call{Script: f.addr, Input: input})
}

// untouched asserts that neither the reader nor the backend was used.
func (f *fixture) untouched(t *testing.T) {
	t.Helper()
	require.Zero(t, f.reader.reads.Load(), "the script reader was called")
	require.Zero(t, f.fb.Calls(), "the backend was called")
}

// waitReturned waits (bounded) until the fake backend's n-th call returned,
// so that goleak sees no goroutine left.
func waitReturned(t *testing.T, fb *fakebackend.Backend, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, fb.WaitReturned(ctx, n), "the fake backend did not return")
}

// waitCalls waits (bounded) until the fake backend's n-th call started.
func waitCalls(t *testing.T, fb *fakebackend.Backend, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, fb.WaitCalls(ctx, n), "the fake backend was not called")
}

// requireUntyped asserts that err is an untyped, retryable error.
func requireUntyped(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	var f *Failure
	require.False(t, errors.As(err, &f), "want an untyped error, got a typed failure: %v", err)
	require.True(t, Retryable(err), "an untyped error must be retryable: %v", err)
}

// requireInvalid asserts that err is an invalid call matching the case
// sentinel kind (and so ErrInvalidCall), neither typed nor retryable.
func requireInvalid(t *testing.T, err error, kind error) {
	t.Helper()
	require.Error(t, err)
	var f *Failure
	require.False(t, errors.As(err, &f), "want an invalid call, got a typed failure: %v", err)
	require.ErrorIs(t, err, ErrInvalidCall)
	require.ErrorIs(t, err, kind)
	require.False(t, Retryable(err), "an invalid call must not be retryable: %v", err)
}

// requireFailure asserts that err is a typed failure with code c and
// returns it.
func requireFailure(t *testing.T, err error, c record.Code) *Failure {
	t.Helper()
	require.Error(t, err)
	var f *Failure
	require.True(t, errors.As(err, &f), "want a typed failure, got %T: %v", err, err)
	require.Equal(t, c, f.Code, "failure: %v", err)
	require.ErrorIs(t, err, f.Unwrap())
	require.False(t, Retryable(err))
	return f
}

// okOutcome is a backend answer with the JSON value v.
func okOutcome(v string) spi.Outcome { return spi.OK(json.RawMessage(v)) }

// watchdog bounds every wait in a test that would hang if a guarantee
// broke: a hung Evaluate fails the test instead of the whole run.
const watchdog = 10 * time.Second

// callWithin evaluates in a goroutine and fails the test when Evaluate has
// not returned within the watchdog.
func (f *fixture) callWithin(t *testing.T, ctx context.Context, input any) (json.RawMessage, error) {
	t.Helper()
	type result struct {
		out json.RawMessage
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := f.call(ctx, input)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(watchdog):
		t.Fatal("Evaluate did not return: the backend was not raced")
		return nil, nil
	}
}

// timeAfterWatchdog fires once the watchdog has passed.
func timeAfterWatchdog() <-chan time.Time { return time.After(watchdog) }

var isControl = textbound.IsControl
