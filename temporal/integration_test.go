package temporal

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandbank/sandbank/builtin"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/wasm/cache/cachetest"
	"github.com/sandbank/sandbank/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
)

// workerEnv, when set to "<host:port>|<task queue>", makes the test binary a
// worker process instead of running tests: the integration test starts one
// that way, to kill it with SIGKILL mid-way.
const workerEnv = "SANDBANK_TEMPORAL_TEST_WORKER"

func TestMain(m *testing.M) {
	if v := os.Getenv(workerEnv); v != "" {
		os.Exit(workerProcess(v))
	}
	if v := os.Getenv(durableWorkerEnv); v != "" {
		os.Exit(durableWorkerProcess(v))
	}
	code := cachetest.Main(m) // the engines' default cache directory is a temporary one
	removeBuilt()
	os.Exit(code)
}

// quietLogger is the SDK logger of the integration test: errors only.
func quietLogger() log.Logger {
	return log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError + 4})))
}

// workerProcess runs a worker that prints "start <run> <attempt>" and
// "end <run> <attempt>" around each activity on stdout, until its standard
// input closes or it is killed.
func workerProcess(v string) int {
	hostPort, queue, _ := strings.Cut(v, "|")
	var mu sync.Mutex
	emit := func(line string) { mu.Lock(); defer mu.Unlock(); fmt.Println(line) }
	c, err := client.Dial(client.Options{HostPort: hostPort, Logger: quietLogger()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	w, err := newTestWorker(c, queue, emit)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	if err := w.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	emit("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	w.Stop()
	return 0
}

// newTestWorker returns a worker running goja and starlark, from the
// shipped engines, that reports each activity to emit.
func newTestWorker(c client.Client, queue string, emit func(string)) (*Worker, error) {
	var reg registry.Registry
	builtin.Register(&reg)
	return NewWorker(c, queue, &reg, &WorkerOptions{
		Options: Options{Engines: []string{"goja", "starlark"}},
		Worker:  worker.Options{Interceptors: []interceptor.WorkerInterceptor{&recorder{emit: emit}}},
	})
}

// recorder reports the start and end of every activity attempt.
type recorder struct {
	interceptor.WorkerInterceptorBase
	emit func(string)
}

func (r *recorder) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &recordingActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, emit: r.emit}
}

type recordingActivity struct {
	interceptor.ActivityInboundInterceptorBase
	emit func(string)
}

func (a *recordingActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	info := activity.GetInfo(ctx)
	a.emit(fmt.Sprintf("start %s %d", info.ActivityID, info.Attempt))
	res, err := a.Next.ExecuteActivity(ctx, in)
	a.emit(fmt.Sprintf("end %s %d", info.ActivityID, info.Attempt))
	return res, err
}

// tally counts one worker's starts and ends per run.
type tally struct {
	mu           sync.Mutex
	starts, ends map[string]int
	last         map[string]time.Time // the last start of each run
	total        int
}

func newTally() *tally {
	return &tally{starts: map[string]int{}, ends: map[string]int{}, last: map[string]time.Time{}}
}

// line records one line of a recorder; it returns the run of a start line.
func (t *tally) line(l string) (started string) {
	f := strings.Fields(l)
	if len(f) != 3 {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch f[0] {
	case "start":
		t.starts[f[1]]++
		t.last[f[1]] = time.Now()
		t.total++
		return f[1]
	case "end":
		t.ends[f[1]]++
	}
	return ""
}

func (t *tally) get(run string) (starts, ends int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.starts[run], t.ends[run]
}

// expectation is what one run of the fan-out must end in.
type expectation struct {
	value     string // JSON of the value, for a good run
	code      effect.Code
	kind      effect.LimitKind
	errorType string
	slow      bool // runs long enough to be in flight when its worker dies
}

const slowSumJS = `let s = 0; for (let k = 0; k < input.n; k++) { s += k } s`

const sumStar = `def main(input):
    s = 0
    for k in range(input["n"]):
        s += k
    return s
`

const runawayStar = `def main(input):
    s = 0
    for k in range(1000000000):
        s += k
    return s
`

// fanOutRequests returns n requests of good and hostile scripts on goja and
// starlark, and what each must end in.
func fanOutRequests(t *testing.T, n int) ([]Request, []expectation) {
	reqs := make([]Request, n)
	want := make([]expectation, n)
	for i := range n {
		var (
			src, engine = "", "goja"
			input       any
			w           expectation
			limits      effect.Call
		)
		sum := func(n int) string { return strconv.Itoa(n * (n - 1) / 2) }
		switch i % 10 {
		case 0, 1, 2:
			src, input, w = `input.a * input.b + 1`, map[string]int{"a": i, "b": 7}, expectation{value: strconv.Itoa(7*i + 1)}
		case 3:
			src, input, w = slowSumJS, map[string]int{"n": 200_000 + i}, expectation{value: sum(200_000 + i), slow: true}
		case 4:
			src, engine, input, w = sumStar, "starlark", map[string]int{"n": 20_000 + i}, expectation{value: sum(20_000 + i)}
		case 5:
			src, input, w = `throw new TypeError("bad " + input.i)`, map[string]int{"i": i}, expectation{code: effect.CodeScriptError}
		case 6:
			src, w = `for (;;) {}`, expectation{code: effect.CodeLimitExceeded, kind: effect.LimitWallClock, slow: true}
			limits.Limits.WallClock = 300 * time.Millisecond
			if i%50 == 16 {
				// Longer than the heartbeat timeout (2 s): only heartbeats
				// keep this attempt alive, so it ends in one attempt.
				limits.Limits.WallClock = 3 * time.Second
			}
		case 7:
			src, engine, w = runawayStar, "starlark", expectation{code: effect.CodeLimitExceeded, kind: effect.LimitCPU}
		case 8:
			src, w = `"x".repeat(3 << 20)`, expectation{code: effect.CodeLimitExceeded, kind: effect.LimitOutput}
		case 9:
			if i%20 == 9 {
				src, w = `input`, expectation{errorType: TypeInvalidCall}
			} else {
				src, input, w = `input.i`, map[string]int{"i": i}, expectation{code: effect.CodeShapeMismatch}
			}
		}
		req, err := NewRequest([]byte(src), input)
		require.NoError(t, err)
		req.Engine, req.Limits = engine, limits.Limits
		switch {
		case w.errorType == TypeInvalidCall:
			req.Source = []byte(`"not the script the address names"`)
		case w.code == effect.CodeShapeMismatch:
			req.Shape = json.RawMessage(`{"type":"string"}`)
		}
		reqs[i], want[i] = req, w
	}
	return reqs, want
}

// freePort returns a TCP port free on 127.0.0.1 now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startProcess starts cmd, hands each line of its stdout to onLine, and
// waits (at most wait) for a line starting with ready. Closing the
// returned writer (its stdin) asks it to stop.
func startProcess(t *testing.T, cmd *exec.Cmd, ready string, wait time.Duration, onLine func(string)) io.WriteCloser {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	up := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), ready) {
				select {
				case up <- sc.Text():
				default:
				}
			}
			if onLine != nil {
				onLine(sc.Text())
			}
		}
	}()
	select {
	case <-up:
	case <-time.After(wait):
		t.Fatalf("%s did not print %q within %v", cmd.Path, ready, wait)
	}
	return stdin
}

// TestFanOutOnDevServer runs a real Temporal dev server and two workers,
// one of them a process of its own, and fans out 200 runs of good and
// hostile scripts; once the worker process has started 40 runs, it is
// killed with SIGKILL while a slow run is in flight. Every run must end
// correctly, none lost; the surviving worker never runs a run twice; a run
// attempted more than once is one whose earlier attempt died with the
// killed worker, so every typed failure is attempted once unless its
// first attempt was lost.
func TestFanOutOnDevServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts a Temporal dev server")
	}
	const runs = 200
	begin := time.Now()
	bin := devServer(t)
	built := time.Since(begin)

	port := freePort(t)
	hostPort := "127.0.0.1:" + strconv.Itoa(port)
	startProcess(t, exec.Command(bin, "-port", strconv.Itoa(port)), "ready", 2*time.Minute, nil)
	c, err := client.Dial(client.Options{HostPort: hostPort, Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	serverUp := time.Since(begin)

	queue := "sandbank-test"
	reqs, want := fanOutRequests(t, runs)

	// Worker B, the one to kill: a process of its own.
	b := newTally()
	killAt := make(chan string, 1)
	bCmd := exec.Command(os.Args[0], "-test.run=^$")
	bCmd.Env = append(os.Environ(), workerEnv+"="+hostPort+"|"+queue)
	startProcess(t, bCmd, "ready", time.Minute, func(l string) {
		if run := b.line(l); run != "" && b.total >= 40 {
			if i, _ := strconv.Atoi(strings.TrimPrefix(run, "run-")); want[i].slow {
				select {
				case killAt <- run:
				default:
				}
			}
		}
	})

	// Worker A, in this process.
	a := newTally()
	wa, err := newTestWorker(c, queue, func(l string) { a.line(l) })
	require.NoError(t, err)
	require.NoError(t, wa.Start())
	t.Cleanup(wa.Stop)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if d, ok := t.Deadline(); ok {
		// End before go test's -timeout does, so the test fails with
		// its own message and its cleanups stop the processes it started.
		ctx, cancel = context.WithDeadline(ctx, d.Add(-15*time.Second))
		defer cancel()
	}
	started := time.Now()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "fanout-" + strconv.FormatInt(started.UnixNano(), 36), TaskQueue: queue},
		FanOutName, FanOutInput{Requests: reqs, Grace: 5 * time.Second, HeartbeatTimeout: 2 * time.Second, RetryInitialInterval: 100 * time.Millisecond})
	require.NoError(t, err)

	var (
		inFlight    string
		killTime    time.Time
		nextAttempt = make(chan time.Time, 1)
	)
	select {
	case inFlight = <-killAt:
		require.NoError(t, bCmd.Process.Kill())
		killTime = time.Now()
		go watchAttempt(ctx, c, run, inFlight, nextAttempt)
	case <-time.After(2 * time.Minute):
		t.Fatal("the worker process did not start 40 runs")
	}
	killed := time.Since(started)

	var outcomes []Outcome
	require.NoError(t, run.Get(ctx, &outcomes))
	wall := time.Since(started)
	require.Len(t, outcomes, runs)

	attempts := historyAttempts(t, ctx, c, run)
	var total, retried, typed, typedRetried int
	for i, o := range outcomes {
		id := RunID(i)
		w := want[i]
		switch {
		case w.value != "":
			if assert.NotNil(t, o.Record, "run %d: %+v", i, o) && assert.Nil(t, o.Record.Failure, "run %d", i) {
				assert.JSONEq(t, w.value, string(o.Record.Value), "run %d", i)
			}
		case w.errorType != "":
			assert.Equal(t, w.errorType, o.ErrorType, "run %d: %+v", i, o)
		default:
			typed++
			if assert.True(t, o.Record != nil && o.Record.Failure != nil, "run %d: %+v", i, o) {
				assert.Equal(t, w.code, o.Record.Failure.Code, "run %d: %v", i, o.Record.Failure)
				assert.Equal(t, w.kind, o.Record.Failure.Kind, "run %d: %v", i, o.Record.Failure)
			}
		}
		n := attempts[id]
		aStarts, _ := a.get(id)
		bStarts, bEnds := b.get(id)
		total += n
		assert.LessOrEqual(t, aStarts, 1, "run %d: the surviving worker ran it twice", i)
		if n > 1 {
			retried++
			if w.value == "" && w.errorType == "" {
				typedRetried++
			}
			// Only an attempt lost with worker B explains a retry: one B
			// started and never ended, or one it got but died before
			// reporting.
			assert.True(t, bStarts > bEnds || n == aStarts+bStarts+1, "run %d: %d attempts (worker A %d starts; worker B %d starts, %d ends)", i, n, aStarts, bStarts, bEnds)
			assert.LessOrEqual(t, n, aStarts+bStarts+1, "run %d", i)
		} else {
			assert.Equal(t, 1, n, "run %d has no attempt in the history", i)
		}
	}
	assert.Greater(t, attempts[inFlight], 1, "the run in flight when worker B died (%s) was retried", inFlight)
	// The heartbeat timeout (2 s), not the start-to-close timeout (40 s),
	// brought the retry: the server gave the run its next attempt within
	// 20 s of the kill, a wide margin for a loaded machine. (When worker A
	// then starts it depends on the queue's backlog.)
	retryAt := <-nextAttempt
	assert.False(t, retryAt.IsZero(), "the server never gave %s a second attempt", inFlight)
	retriedAfter := retryAt.Sub(killTime)
	assert.Less(t, retriedAfter, 20*time.Second, "the run lost with worker B got its next attempt %v after the kill", retriedAfter)
	t.Logf("dev server built in %v, up at %v; %d runs (%d typed failures) in %v wall; worker B killed at %v with %s in flight, given its next attempt %v later; worker A started %d attempts, worker B %d; %d attempts in all, %d runs retried (%d of them typed failures whose first attempt died with B), every other run attempted once",
		built.Round(time.Millisecond), serverUp.Round(time.Millisecond), runs, typed, wall.Round(time.Millisecond), killed.Round(time.Millisecond), inFlight, retriedAfter.Round(time.Millisecond), a.total, b.total, total, retried, typedRetried)
}

// watchAttempt sends on retried when the server has given the pending
// activity id an attempt past its first (or the zero time when it ends
// first, or ctx does).
func watchAttempt(ctx context.Context, c client.Client, run client.WorkflowRun, id string, retried chan<- time.Time) {
	for ctx.Err() == nil {
		d, err := c.DescribeWorkflowExecution(ctx, run.GetID(), run.GetRunID())
		if err == nil {
			pending := false
			for _, p := range d.GetPendingActivities() {
				if p.GetActivityId() != id {
					continue
				}
				pending = true
				if p.GetAttempt() > 1 {
					retried <- time.Now()
					return
				}
			}
			if !pending {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	retried <- time.Time{}
}

// historyAttempts returns, per activity ID, the attempt that ended the
// run, as the server recorded it: the attempts it made.
func historyAttempts(t *testing.T, ctx context.Context, c client.Client, run client.WorkflowRun) map[string]int {
	t.Helper()
	ids := map[int64]string{}
	attempts := map[string]int{}
	it := c.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		if s := e.GetActivityTaskScheduledEventAttributes(); s != nil {
			ids[e.GetEventId()] = s.GetActivityId()
		}
		if s := e.GetActivityTaskStartedEventAttributes(); s != nil {
			attempts[ids[s.GetScheduledEventId()]] = int(s.GetAttempt())
		}
	}
	return attempts
}
